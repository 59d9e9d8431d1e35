"""OSM PBF -> :class:`engine.routing.graph.RoadGraph` (the ``roads`` import stage's work).

The steps of :func:`build_graph`:

1. :func:`read_osm`: one streaming pass with pyosmium (node locations cached by osmium, a key
   pre-filter so Python only sees ways with ``highway``/``route``, tagged nodes and relations
   with ``type``): for each requested profile (:mod:`engine.routing.profiles`: car, foot,
   bicycle) the ways it may use, node penalties and barriers, the via-node turn restrictions
   that name it; the foot profile also gets each pedestrian area's outline and the straight
   crossings between its entry points (:func:`pedestrian_area_ways`).
2. :func:`_graph_arrays`: the ways as flat columns, cut at graph nodes into directed edges, sorted
   by tail node, with the CSR indexes and the geometry arrays (numpy columns throughout: no Python
   object per node or edge).
3. Strongly connected components of the node graph, the turn graph (:func:`build_turns`: bearings,
   allowed turns and their costs) and its components, then the contraction hierarchy.

Steps 2-3 run once per profile (:func:`build_graphs`): each profile has its own graph.

Why not osmnx for the topology: on an extract that cuts ways at its boundary (the Helsinki
sample) ``osmnx.graph_from_xml`` refuses the data ("Some edges missing nodes"), while this module
keeps each way's runs of known nodes; osmnx would also still need the profile per direction
(access:forward, oneway=-1, maxspeed zones), node penalties/barriers and the restriction
relations, which it does not read; and networkx is not used at query time either way. The
measurements behind this choice are in ``docs/engineering-history.md``.
"""

from __future__ import annotations

import logging
import math
import tempfile
import time
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import osmium
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from engine.arrays import narrowed_offsets
from engine.geo import haversine_m_np
from engine.heap_memory import release_free_memory
from engine.progress import ImportProgress
from engine.routing import ch, foot
from engine.routing import profile as P
from engine.routing.graph import ARRAYS, RoadGraph
from engine.routing.profiles import CAR, Profile

# tags the reading pass looks at (the pre-filter: objects with none of them never reach Python)
OSM_KEYS = ("highway", "barrier", "route", "type", "access", "foot", "bicycle")
# a turn graph this large waits on disk while it is contracted (park_columns): the samples' and the
# tests' towns stay in memory
PARK_MIN_TURNS = ch.SPILL_MIN_ARCS
AREA_MAX_ENTRIES = 12  # a pedestrian area with more entry points is walked along its outline only (each
# crossing adds turns at both ends: 40 entries tripled the contraction time of Helsinki's foot graph)

Arrays = dict[str, np.ndarray]


# -- 1. reading ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoadWay:
    """A drivable way, or one run of its nodes inside the extract when the extract cuts it. The
    reading pass keeps the node lists as typed buffers (:data:`Run`: 8 bytes a value, not a Python
    object each)."""

    id: int
    prof: P.WayProfile
    refs: Sequence[int] = field(default_factory=list)
    lat: Sequence[float] = field(default_factory=list)
    lng: Sequence[float] = field(default_factory=list)


Run = tuple["array[int]", "array[float]", "array[float]"]  # refs, lat, lng of consecutive nodes


def _new_run() -> Run:
    return array("q"), array("d"), array("d")


class Restriction(NamedTuple):
    """A turn restriction relation with a via node."""

    kind: str  # "no" / "only"
    from_way: int
    via_node: int
    to_way: int


@dataclass
class OsmRoads:
    """What the graph is built from."""

    ways: list[RoadWay] = field(default_factory=list)
    node_penalty: dict[int, float | None] = field(default_factory=dict)  # seconds; None: a barrier that blocks
    restrictions: list[Restriction] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=lambda: {"restrictions_via_way": 0, "ways_missing_nodes": 0})


def read_osm(
    path: Path, profiles: tuple[Profile, ...] = (CAR,), progress: ImportProgress | None = None
) -> dict[str, OsmRoads]:
    """Per profile: its ways, node penalties and via-node restrictions from an OSM file (PBF or
    XML), in one pass. A way's node lists are shared by the profiles that use it."""
    roads = {p.name: OsmRoads() for p in profiles}
    areas: list[RoadWay] = []  # pedestrian areas (outlines), for the profiles that cross them
    fp = osmium.FileProcessor(str(path)).with_locations().with_filter(osmium.filter.KeyFilter(*OSM_KEYS))
    with (progress or ImportProgress.silent()).step("roads: reading", unit="tagged objects") as step:
        for obj in fp:
            step.advance()
            _read_object(roads, profiles, obj, areas)
    for p in profiles:
        if p.pedestrian_areas:
            roads[p.name].ways.extend(pedestrian_area_ways(areas, roads[p.name].ways))
    return roads


def _read_object(
    roads: dict[str, OsmRoads],
    profiles: tuple[Profile, ...],
    obj: osmium.osm.Node | osmium.osm.Way | osmium.osm.Relation | osmium.osm.Area | osmium.osm.Changeset,
    areas: list[RoadWay],
) -> None:
    """What one object of the reading pass gives each profile: a node's penalty (barriers,
    signals), a way, a turn restriction."""
    if isinstance(obj, osmium.osm.Node):
        tags = {t.k: t.v for t in obj.tags}
        for p in profiles:
            pen = p.node_penalty(tags)
            if pen is None or pen > 0:
                roads[p.name].node_penalty[obj.id] = pen
    elif isinstance(obj, osmium.osm.Way):
        _read_way(roads, profiles, obj, areas)
    elif isinstance(obj, osmium.osm.Relation):
        _read_restriction(roads, profiles, obj)


def _node_runs(way: osmium.osm.Way) -> tuple[list[Run], bool]:
    """The way's runs of nodes inside the extract (refs, lat, lng) and whether any node is missing."""
    runs: list[Run] = [_new_run()]
    for nd in way.nodes:
        loc = nd.location
        if not loc.valid():
            if runs[-1][0]:
                runs.append(_new_run())
            continue
        runs[-1][0].append(nd.ref)
        runs[-1][1].append(loc.lat)
        runs[-1][2].append(loc.lon)
    return [r for r in runs if len(r[0]) >= 2], len(runs) > 1 or len(runs[0][0]) < len(way.nodes)


def _read_way(
    roads: dict[str, OsmRoads], profiles: tuple[Profile, ...], way: osmium.osm.Way, areas: list[RoadWay]
) -> None:
    """A way for each profile that may use it; a way cut by the extract boundary keeps its runs of
    known nodes."""
    tags = {t.k: t.v for t in way.tags}
    profs = [(p, p.way_profile(tags)) for p in profiles]
    area = any(p.pedestrian_areas for p in profiles) and foot.is_pedestrian_area(tags)
    if area is False and all(prof is None for _, prof in profs):
        return
    runs, missing = _node_runs(way)
    if area and not missing and runs and runs[0][0][0] == runs[0][0][-1]:
        areas.append(RoadWay(way.id, foot.area_profile(tags), *runs[0]))
    for p, prof in profs:
        if prof is None:
            continue
        if missing:
            roads[p.name].skipped["ways_missing_nodes"] += 1
        roads[p.name].ways.extend(RoadWay(way.id, prof, *run) for run in runs)


def _read_restriction(roads: dict[str, OsmRoads], profiles: tuple[Profile, ...], relation: osmium.osm.Relation) -> None:
    """A turn restriction from way to way over a via node, for the profiles it names (via ways are
    not supported: counted)."""
    tags = {t.k: t.v for t in relation.tags}
    kinds = [(p, p.restriction_kind(tags)) for p in profiles]
    if all(kind is None for _, kind in kinds):
        return
    frm = via = to = None
    via_way = False
    for m in relation.members:
        if m.role == "from" and m.type == "w":
            frm = m.ref
        elif m.role == "to" and m.type == "w":
            to = m.ref
        elif m.role == "via":
            if m.type == "n":
                via = m.ref
            else:
                via_way = True
    for p, kind in kinds:
        if kind is None:
            continue
        if via_way:
            roads[p.name].skipped["restrictions_via_way"] += 1
        elif frm is not None and via is not None and to is not None:
            roads[p.name].restrictions.append(Restriction(kind, frm, via, to))


def pedestrian_area_ways(areas: list[RoadWay], ways: list[RoadWay]) -> list[RoadWay]:
    """Each pedestrian area's outline, and a straight crossing between every two of its entry
    points (outline nodes other walkable ways use) whose line stays inside the area."""
    from shapely import LineString, Polygon, prepared

    used: set[int] = set()
    for w in ways:
        used.update(w.refs)
    out: list[RoadWay] = []
    for area in areas:
        out.append(area)
        entries = [i for i, ref in enumerate(area.refs[:-1]) if ref in used]
        if len(area.refs) < 4 or not 2 <= len(entries) <= AREA_MAX_ENTRIES:
            continue
        shape = Polygon(list(zip(area.lng, area.lat, strict=True)))
        if not shape.is_valid:
            continue
        inside = prepared.prep(shape.buffer(1e-9))
        for k, i in enumerate(entries):
            for j in entries[k + 1 :]:
                if abs(i - j) == 1 or abs(i - j) == len(area.refs) - 2:
                    continue  # neighbours on the outline: the outline joins them already
                line = LineString([(area.lng[i], area.lat[i]), (area.lng[j], area.lat[j])])
                if inside.contains(line):
                    refs = [area.refs[i], area.refs[j]]
                    out.append(
                        RoadWay(area.id, area.prof, refs, [area.lat[i], area.lat[j]], [area.lng[i], area.lng[j]])
                    )
    return out


# -- 2. nodes and edges --------------------------------------------------------------------------
#
# The ways, their pieces and the edges are columns (numpy arrays), never one Python object per
# node, piece or edge: at country size (millions of edges) per-edge objects held most of the
# stage's memory. Every value is computed by the same float64 operations, in the same order per
# element, as a per-way loop would, so the arrays are the same to the bit.

EDGE_CHUNK = 1 << 20  # edges whose geometry is gathered at a time (bounds the index temporaries)


@dataclass
class _WayPoints:
    """A profile's ways as flat columns: the points of way k are ``first[k]:first[k + 1]``."""

    first: np.ndarray  # int64 [W + 1]
    refs: np.ndarray  # int64 [P] OSM node ids
    lat: np.ndarray  # float64 [P]
    lng: np.ndarray  # float64 [P]
    cum_m: np.ndarray  # float64 [P]: metres from the way's first point


def _way_points(ways: list[RoadWay]) -> _WayPoints:
    sizes = np.fromiter((len(w.refs) for w in ways), dtype=np.int64, count=len(ways))
    first = np.zeros(len(ways) + 1, dtype=np.int64)
    np.cumsum(sizes, out=first[1:])
    total = int(first[-1])
    refs = np.fromiter(chain.from_iterable(w.refs for w in ways), dtype=np.int64, count=total)
    lat = np.fromiter(chain.from_iterable(w.lat for w in ways), dtype=np.float64, count=total)
    lng = np.fromiter(chain.from_iterable(w.lng for w in ways), dtype=np.float64, count=total)
    cum = np.empty(total, dtype=np.float64)
    for k in range(len(ways)):  # per way, as the distances were always summed (float rounding)
        s, t = int(first[k]), int(first[k + 1])
        wlat, wlng = lat[s:t], lng[s:t]
        cum[s] = 0.0
        np.cumsum(haversine_m_np(wlat[:-1], wlng[:-1], wlat[1:], wlng[1:]), out=cum[s + 1 : t])
    return _WayPoints(first, refs, lat, lng, cum)


def _graph_point_mask(pts: _WayPoints, node_penalty: dict[int, float | None]) -> np.ndarray:
    """Per point: its OSM node becomes a graph node (shared by ways or used twice, a way's end, a
    node with a penalty or a barrier); the others are geometry only."""
    refs, inverse, use = np.unique(pts.refs, return_inverse=True, return_counts=True)
    ends = np.concatenate((pts.first[:-1], pts.first[1:] - 1))
    use += np.bincount(inverse[ends], minlength=refs.shape[0])
    is_graph = use >= 2
    del use
    if node_penalty:
        penalised = np.fromiter(node_penalty.keys(), dtype=np.int64, count=len(node_penalty))
        is_graph |= np.isin(refs, penalised)
    return is_graph[inverse]


@dataclass
class _WayColumns:
    """What each way's profile says, per way."""

    forward: np.ndarray
    backward: np.ndarray
    speed_fwd: np.ndarray
    speed_bwd: np.ndarray
    ferry_s: np.ndarray  # nan: not a ferry with a duration
    weight_factor: np.ndarray
    cls: np.ndarray
    flags: np.ndarray
    way: np.ndarray
    name: np.ndarray
    names: list[str]  # street names by id (0 = unnamed)


def _way_columns(ways: list[RoadWay]) -> _WayColumns:
    names: dict[str, int] = {"": 0}
    name = np.fromiter((names.setdefault(w.prof.name, len(names)) for w in ways), np.int32, count=len(ways))

    def column(values: Iterable[Any], dtype: Any) -> np.ndarray:
        return np.fromiter(values, dtype=dtype, count=len(ways))

    ferry = (w.prof.ferry_duration_s for w in ways)
    return _WayColumns(
        forward=column((w.prof.forward for w in ways), np.bool_),
        backward=column((w.prof.backward for w in ways), np.bool_),
        speed_fwd=column((w.prof.speed_fwd_kmh for w in ways), np.float64),
        speed_bwd=column((w.prof.speed_bwd_kmh for w in ways), np.float64),
        ferry_s=column((math.nan if f is None else f for f in ferry), np.float64),
        weight_factor=column((w.prof.weight_factor for w in ways), np.float64),
        cls=column((P.CLASS_CODE[w.prof.highway] for w in ways), np.uint8),
        flags=column((w.prof.flags for w in ways), np.uint8),
        way=column((w.id for w in ways), np.int64),
        name=name,
        names=sorted(names, key=names.__getitem__),
    )


def _csr_first(index_of: np.ndarray, n: int) -> np.ndarray:
    """``first[v]:first[v+1]`` are the entries whose (sorted) index is v."""
    first = np.zeros(n + 1, dtype=np.int64)
    np.add.at(first, index_of.astype(np.int64) + 1, 1)
    return np.cumsum(first)


def _pieces(pts: _WayPoints, is_graph: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ways cut at graph nodes: each piece's first and last point and its way, in way order."""
    cut = is_graph.copy()
    cut[pts.first[:-1]] = True
    cut[pts.first[1:] - 1] = True
    last = np.zeros(cut.shape[0], dtype=np.bool_)
    last[pts.first[1:] - 1] = True
    at = np.flatnonzero(cut)
    del cut
    starts = ~last[at[:-1]]  # a cut that is not its way's last point starts a piece to the next cut
    a, b = at[:-1][starts], at[1:][starts]
    return a, b, np.searchsorted(pts.first, a, side="right") - 1


def _number_nodes(pts: _WayPoints, a: np.ndarray, b: np.ndarray) -> tuple[Arrays, np.ndarray, np.ndarray]:
    """Graph nodes numbered in the order the pieces use them (tail, then head, piece after
    piece); the node arrays and each piece's tail and head."""
    used = np.empty(2 * a.shape[0], dtype=np.int64)
    used[0::2], used[1::2] = a, b
    _, seen_at, inverse = np.unique(pts.refs[used], return_index=True, return_inverse=True)
    by_first_use = np.argsort(seen_at, kind="stable")
    node_of = np.empty(by_first_use.shape[0], dtype=np.int64)
    node_of[by_first_use] = np.arange(by_first_use.shape[0])
    point = used[seen_at[by_first_use]]
    nodes = {"node_lat": pts.lat[point], "node_lng": pts.lng[point], "node_osm": pts.refs[point]}
    ends = node_of[inverse.reshape(-1)]
    return nodes, ends[0::2], ends[1::2]


def _edge_geometry(pts: _WayPoints, a: np.ndarray, b: np.ndarray, backward: np.ndarray, length: np.ndarray) -> Arrays:
    """Each edge's points in travel direction (a backward edge walks its piece from ``b`` to
    ``a``) and the distance from its first point, edges in the given order."""
    m = a.shape[0]
    sizes = b - a + 1
    first = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(sizes, out=first[1:])
    total = int(first[-1])
    lat = np.empty(total, dtype=np.float64)
    lng = np.empty(total, dtype=np.float64)
    cum = np.empty(total, dtype=np.float32)
    for lo in range(0, m, EDGE_CHUNK):
        hi = min(m, lo + EDGE_CHUNK)
        s, t = int(first[lo]), int(first[hi])
        edge = np.repeat(np.arange(lo, hi), sizes[lo:hi])
        step = np.arange(s, t) - first[edge]
        back = backward[edge]
        point = np.where(back, b[edge] - step, a[edge] + step)
        lat[s:t], lng[s:t] = pts.lat[point], pts.lng[point]
        from_a = pts.cum_m[point] - pts.cum_m[a[edge]]
        cum[s:t] = np.where(back, length[edge] - from_a, from_a)
    return {
        "edge_geom_first": narrowed_offsets(first),
        "geom_lat": lat,
        "geom_lng": lng,
        "geom_cum_m": cum,
    }


def _graph_arrays(ways: list[RoadWay], node_penalty: dict[int, float | None]) -> tuple[Arrays, list[str]]:
    """The node and edge arrays of :mod:`engine.routing.graph` (edges sorted by tail node) and
    the street names by id: each way cut into pieces between graph nodes, one edge per drivable
    direction of a piece (forward, then backward), a piece that starts and ends at one node
    within 0.5 m left out."""
    pts = _way_points(ways)
    wc = _way_columns(ways)
    a, b, pw = _pieces(pts, _graph_point_mask(pts, node_penalty))
    nodes, tail, head = _number_nodes(pts, a, b)
    n = nodes["node_osm"].shape[0]
    length = pts.cum_m[b] - pts.cum_m[a]
    keep = ~((tail == head) & (length < 0.5))
    a, b, pw, tail, head, length = a[keep], b[keep], pw[keep], tail[keep], head[keep], length[keep]
    way_length = pts.cum_m[pts.first[1:] - 1][pw]
    with np.errstate(divide="ignore", invalid="ignore"):
        ferry = ~np.isnan(wc.ferry_s[pw]) & (way_length > 0)  # a tagged duration, shared by length
        ferry_s = wc.ferry_s[pw] * length / way_length
        dur_f = np.where(ferry, ferry_s, length / (wc.speed_fwd[pw] / 3.6))
        dur_b = np.where(ferry, ferry_s, length / (wc.speed_bwd[pw] / 3.6))
    fwd, bwd = wc.forward[pw], wc.backward[pw]
    # edges in the order they were always made: a piece's forward edge, then its backward one
    slot = np.zeros(a.shape[0] + 1, dtype=np.int64)
    np.cumsum(fwd.astype(np.int64) + bwd, out=slot[1:])
    m = int(slot[-1])
    at_f, at_b = slot[:-1][fwd], (slot[:-1] + fwd)[bwd]
    is_back = np.zeros(m, dtype=np.bool_)
    is_back[at_b] = True
    piece = np.empty(m, dtype=np.int64)
    piece[at_f], piece[at_b] = np.flatnonzero(fwd), np.flatnonzero(bwd)
    edge_tail = np.where(is_back, head[piece], tail[piece]).astype(np.int32)
    duration = np.where(is_back, dur_b[piece], dur_f[piece])
    twin = np.full(m, -1, dtype=np.int64)
    both = fwd & bwd
    twin[slot[:-1][both]], twin[slot[:-1][both] + 1] = slot[:-1][both] + 1, slot[:-1][both]

    order = np.argsort(edge_tail, kind="stable")
    new_id = np.empty(m, dtype=np.int64)
    new_id[order] = np.arange(m)
    piece, is_back, twin, duration = piece[order], is_back[order], twin[order], duration[order]
    edge_tail = edge_tail[order]
    edge_head = np.where(is_back, tail[piece], head[piece]).astype(np.int32)
    epw = pw[piece]
    arrays = {
        **nodes,
        "node_first_out": _csr_first(edge_tail, n),
        "node_first_in": _csr_first(edge_head, n),
        "in_edges": np.argsort(edge_head, kind="stable").astype(np.int32),
        "edge_tail": edge_tail,
        "edge_head": edge_head,
        "edge_twin": np.where(twin >= 0, new_id[np.maximum(twin, 0)], -1).astype(np.int32),
        "edge_length_m": length[piece].astype(np.float32),
        "edge_duration_s": duration.astype(np.float32),
        "edge_weight": (duration * wc.weight_factor[epw]).astype(np.float32),
        "edge_class": wc.cls[epw],
        "edge_flags": wc.flags[epw],
        "edge_way": wc.way[epw],
        "edge_name": wc.name[epw],
        **_edge_geometry(pts, a[piece], b[piece], is_back, length[piece]),
    }
    return arrays, wc.names


def _strong_components(matrix: csr_matrix | None) -> tuple[np.ndarray, np.ndarray]:
    """Component label per vertex and size per component (int32); empty for no graph."""
    if matrix is None:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
    _, labels = connected_components(matrix, directed=True, connection="strong")
    return labels.astype(np.int32), np.bincount(labels).astype(np.int32)


def _node_components(a: Arrays) -> Arrays:
    """Strongly connected components of the node graph (one-ways respected)."""
    n, m = a["node_lat"].shape[0], a["edge_tail"].shape[0]
    matrix = csr_matrix((np.ones(m), (a["edge_tail"], a["edge_head"])), shape=(n, n)) if n else None
    labels, sizes = _strong_components(matrix)
    return {"node_component": labels, "component_size": sizes}


def _edge_components(a: Arrays) -> Arrays:
    """Strongly connected components of the turn graph: the real connectivity (one-ways, turn
    restrictions, barriers); snapping prefers the big ones."""
    m = a["edge_tail"].shape[0]
    turn_to, turn_first_out = a["turn_to"], a["turn_first_out"]
    matrix = csr_matrix((np.ones(turn_to.shape[0]), turn_to, turn_first_out), shape=(m, m)) if m else None
    labels, sizes = _strong_components(matrix)
    return {"edge_component": labels, "edge_component_size": sizes}


# -- 4. turns ------------------------------------------------------------------------------------


def _bearing(lat1: float, lng1: float, lat2: float, lng2: float) -> float:
    dx = (lng2 - lng1) * math.cos(math.radians((lat1 + lat2) / 2))
    dy = lat2 - lat1
    return (math.degrees(math.atan2(dx, dy)) + 360.0) % 360.0


def _edge_bearings(a: Arrays) -> tuple[np.ndarray, np.ndarray]:
    """Compass bearing of each edge's first segment and of its last (arriving at the head)."""
    gf, glat, glng = a["edge_geom_first"], a["geom_lat"], a["geom_lng"]
    m = a["edge_head"].shape[0]
    start_b = np.empty(m)
    end_b = np.empty(m)
    for e in range(m):
        s, t = int(gf[e]), int(gf[e + 1])
        start_b[e] = _bearing(glat[s], glng[s], glat[s + 1], glng[s + 1])
        end_b[e] = _bearing(glat[t - 2], glng[t - 2], glat[t - 1], glng[t - 1])
    return start_b, end_b


def _road_degree(a: Arrays) -> np.ndarray:
    """Number of distinct road pieces at each node (an edge and its twin count once)."""
    edge_tail, edge_head, edge_twin = a["edge_tail"], a["edge_head"], a["edge_twin"]
    n = a["node_first_out"].shape[0] - 1
    once = (edge_twin < 0) | (np.arange(edge_head.shape[0]) < edge_twin)
    return np.bincount(edge_tail[once], minlength=n) + np.bincount(edge_head[once], minlength=n)


def _restrictions_by_via(a: Arrays, restrictions: list[Restriction]) -> dict[int, list[Restriction]]:
    """The restrictions that count, by via node (graph node number): their from and to ways are
    drivable and meet at the via node (an only_* toward a way the car may not use would otherwise
    trap every arrival; OSRM drops such relations too)."""
    node_of = _node_lookup(a["node_osm"])
    first_out, first_in, in_edges, edge_way = a["node_first_out"], a["node_first_in"], a["in_edges"], a["edge_way"]
    by_via: dict[int, list[Restriction]] = defaultdict(list)
    for r in restrictions:
        v = node_of(r.via_node)
        if v is None:
            continue
        out_ways = edge_way[first_out[v] : first_out[v + 1]]
        in_ways = edge_way[in_edges[first_in[v] : first_in[v + 1]]]
        ways_at = set(out_ways.tolist()) | set(in_ways.tolist())
        if r.from_way in ways_at and r.to_way in ways_at:
            by_via[v].append(r)
    return by_via


def _node_lookup(node_osm: np.ndarray) -> Any:
    """A function from an OSM node id to its graph node number (None when not a graph node)."""
    order = np.argsort(node_osm, kind="stable")
    ids = node_osm[order]

    def node_of(osm_id: int) -> int | None:
        i = int(np.searchsorted(ids, osm_id))
        return int(order[i]) if i < ids.shape[0] and ids[i] == osm_id else None

    return node_of


def _node_penalties(node_osm: np.ndarray, node_penalty: dict[int, float | None]) -> tuple[np.ndarray, np.ndarray]:
    """Per graph node: its penalty in seconds (0 when none) and whether a barrier blocks it."""
    n = node_osm.shape[0]
    penalty, blocked = np.zeros(n, dtype=np.float64), np.zeros(n, dtype=np.bool_)
    if not node_penalty or not n:
        return penalty, blocked
    osm = np.fromiter(node_penalty.keys(), dtype=np.int64, count=len(node_penalty))
    pen = np.fromiter((math.nan if p is None else p for p in node_penalty.values()), np.float64, len(node_penalty))
    order = np.argsort(node_osm, kind="stable")
    at = np.minimum(np.searchsorted(node_osm[order], osm), n - 1)
    found = node_osm[order][at] == osm
    nodes, pen = order[at[found]], pen[found]
    blocked[nodes] = np.isnan(pen)
    penalty[nodes] = np.where(np.isnan(pen), 0.0, pen)
    return penalty, blocked


def _forbidden(rules: Iterable[Restriction], way_in: int, way_out: int) -> bool:
    """Whether a restriction at the node forbids going from ``way_in`` on to ``way_out``."""
    return any(
        r.from_way == way_in
        and ((r.kind == "no" and way_out == r.to_way) or (r.kind == "only" and way_out != r.to_way))
        for r in rules
    )


@dataclass
class TurnTable:
    """The turn graph's arrays (see :mod:`engine.routing.graph`) and the bearings they use."""

    first_out: np.ndarray
    to: np.ndarray
    cost_s: np.ndarray
    weight: np.ndarray
    bearing_start: np.ndarray
    bearing_end: np.ndarray
    restricted_removed: int  # turns left out because of a restriction

    def arrays(self) -> Arrays:
        return {
            "edge_bearing_start": self.bearing_start.astype(np.float32),
            "edge_bearing_end": self.bearing_end.astype(np.float32),
            "turn_first_out": narrowed_offsets(self.first_out),
            "turn_to": self.to,
            "turn_cost_s": self.cost_s,
            "turn_weight": self.weight,
        }


class _TurnRules:
    """Which turns a profile may take after each edge, and what each costs."""

    def __init__(self, a: Arrays, roads: OsmRoads, profile: Profile = CAR) -> None:
        self.profile = profile
        self.edge_head, self.edge_twin = a["edge_head"], a["edge_twin"]
        self.edge_way, self.edge_flags = a["edge_way"], a["edge_flags"]
        self.first_out = a["node_first_out"]
        self.node_penalty_s, self.blocked = _node_penalties(a["node_osm"], roads.node_penalty)
        self.start_b, self.end_b = _edge_bearings(a)
        self.deg = _road_degree(a)
        self.by_via = _restrictions_by_via(a, roads.restrictions)
        self.removed = 0
        self.pushed = _pushed_edges(a, profile)

    def turns(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The turns after edges ``lo`` to ``hi`` - 1, in edge order and, after each, in the order
        of the edges leaving its head: (edge arrived on, edge entered, duration s, extra weight).

        Every edge leaving the head is a candidate. The U-turn is taken only where the profile
        turns back anywhere; a barrier blocks every turn at its node; a restriction leaves its
        turns out. An edge with no turn left gets its U-turn back (a dead end, a barrier) unless a
        restriction forbids it."""
        head = self.edge_head[lo:hi].astype(np.int64)
        first = self.first_out[head]
        count = self.first_out[head + 1] - first
        e, v = np.repeat(np.arange(lo, hi), count), np.repeat(head, count)
        f = np.repeat(first, count) + np.arange(e.shape[0]) - np.repeat(np.cumsum(count) - count, count)
        uturn = f == self.edge_twin[e]
        forbidden = self._forbidden(e, f, v)
        allowed = ~self.blocked[v] & (~uturn | self.profile.turns_back)
        onward = allowed & ~forbidden
        self.removed += int((allowed & forbidden).sum())
        back = uturn & ~forbidden & ~(np.bincount(e[onward] - lo, minlength=hi - lo) > 0)[e - lo]
        keep = onward | back
        e, f, v, back = e[keep], f[keep], v[keep], back[keep]
        on = ~back
        cost, extra = np.zeros(e.shape[0]), np.zeros(e.shape[0])
        cost[back] = self._uturn_s(v[back])
        cost[on] = self._turn_s(e[on], f[on], v[on]) + self.node_penalty_s[v[on]]
        extra[on] = self._extra_weight(e[on], f[on])
        return e, f, cost, extra

    def _extra_weight(self, e: np.ndarray, f: np.ndarray) -> np.ndarray:
        """What each turn from ``e`` onto ``f`` weighs beyond its duration: entering a way of
        restricted access, getting off to push."""
        flags_e, flags_f = self.edge_flags[e], self.edge_flags[f]
        enters_restricted = ((flags_f & P.FLAG_RESTRICTED) != 0) & ((flags_e & P.FLAG_RESTRICTED) == 0)
        extra = np.where(enters_restricted, P.RESTRICTED_ENTRY_S, 0.0)
        extra += np.where(self.pushed[f] & ~self.pushed[e], self.profile.mode_change_s, 0.0)
        return extra

    def _forbidden(self, e: np.ndarray, f: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Per candidate turn, whether a restriction at its node forbids it (few nodes have one)."""
        out = np.zeros(e.shape[0], dtype=np.bool_)
        if self.by_via:
            at = np.flatnonzero(np.isin(v, np.fromiter(self.by_via, dtype=np.int64, count=len(self.by_via))))
            way_in, way_out = self.edge_way[e[at]].tolist(), self.edge_way[f[at]].tolist()
            for i, node, w_in, w_out in zip(at.tolist(), v[at].tolist(), way_in, way_out, strict=True):
                out[i] = _forbidden(self.by_via[node], w_in, w_out)
        return out

    def _turn_s(self, e: np.ndarray, f: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The profile's duration of each turn from ``e`` onto ``f`` by the angle between them (a
        turn back counts as a turn of its angle here, as a U-turn only where nothing else is
        left: :meth:`_uturn_s`)."""
        if self.profile.turns_free:
            return np.zeros(e.shape[0])
        angle = (self.start_b[f] - self.end_b[e] + 540.0) % 360.0 - 180.0
        roundabout = ((self.edge_flags[e] | self.edge_flags[f]) & P.FLAG_ROUNDABOUT) != 0
        duration = self.profile.turn_duration_s
        return np.fromiter(
            (
                duration(a, n_roads=n, uturn=False, roundabout=r)
                for a, n, r in zip(angle.tolist(), self.deg[v].tolist(), roundabout.tolist(), strict=True)
            ),
            dtype=np.float64,
            count=e.shape[0],
        )

    def _uturn_s(self, v: np.ndarray) -> np.ndarray:
        """The duration of turning back at each node (it depends on the roads that meet there)."""
        degrees, at = np.unique(self.deg[v], return_inverse=True)
        duration = self.profile.turn_duration_s
        per_degree = [duration(180.0, n_roads=d, uturn=True, roundabout=False) for d in degrees.tolist()]
        return np.asarray(per_degree, dtype=np.float64)[at.ravel()]


def _pushed_edges(a: Arrays, profile: Profile) -> np.ndarray:
    """Per edge: travelled at or below the profile's pushing speed (a cyclist walking the bicycle);
    all False for a profile without a mode change penalty."""
    if not profile.mode_change_s:
        return np.zeros(a["edge_head"].shape[0], bool)
    length, duration = a["edge_length_m"].astype(np.float64), a["edge_duration_s"].astype(np.float64)
    kmh = np.divide(length, duration, out=np.full(length.shape, np.inf), where=duration > 0) * 3.6
    return np.asarray(kmh <= profile.pushing_kmh + 0.01)


TURN_CHUNK_EDGES = 1 << 18  # edges whose turns are worked out at a time (bounds the candidates' arrays)


def build_turns(a: Arrays, roads: OsmRoads, profile: Profile = CAR) -> TurnTable:
    """The turn graph: for each edge the turns allowed after it (restrictions, barriers and the
    U-turn rules applied by leaving turns out), with their durations and routing weights, worked
    out as arrays a chunk of edges at a time."""
    rules = _TurnRules(a, roads, profile)
    m = a["edge_head"].shape[0]
    to, cost_s, weight = [np.zeros(0, np.int32)], [np.zeros(0, np.float32)], [np.zeros(0, np.float32)]
    per_edge = np.zeros(m, dtype=np.int64)
    for lo in range(0, m, TURN_CHUNK_EDGES):
        hi = min(m, lo + TURN_CHUNK_EDGES)
        e, f, cost, extra = rules.turns(lo, hi)
        per_edge[lo:hi] = np.bincount(e - lo, minlength=hi - lo)
        to.append(f.astype(np.int32))
        cost_s.append(cost.astype(np.float32))
        weight.append((cost + extra).astype(np.float32))
    first_out = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(per_edge, out=first_out[1:])
    return TurnTable(
        first_out=first_out,
        to=np.concatenate(to),
        cost_s=np.concatenate(cost_s),
        weight=np.concatenate(weight),
        bearing_start=rules.start_b,
        bearing_end=rules.end_b,
        restricted_removed=rules.removed,
    )


# -- the whole build -----------------------------------------------------------------------------


def _graph_meta(path: Path, a: Arrays, roads: OsmRoads, turns: TurnTable, seconds: dict[str, float]) -> dict[str, Any]:
    n, m = a["node_lat"].shape[0], a["edge_tail"].shape[0]
    lat, lng = a["geom_lat"], a["geom_lng"]
    return {
        "source": str(path),
        "bbox": [float(lng.min()), float(lat.min()), float(lng.max()), float(lat.max())] if m else None,
        "counts": {"nodes": n, "edges": m, "turns": int(turns.to.shape[0]), "geometry_points": int(lat.shape[0])},
        "restrictions": {
            "via_node": len(roads.restrictions),
            "applied_turns_removed": turns.restricted_removed,
            **roads.skipped,
        },
        "seconds": seconds,
    }


# How a profile's hierarchy gets built: given the graph, the directory its columns are parked in
# (park_columns; None for a graph small enough to stay in memory), the progress step's label and
# the progress, the arrays of ch.build. contract_here builds it in this process; the import builds
# a parked graph's in a child process (engine.ingest.contraction_child).
Contraction = Callable[[RoadGraph, Path | None, str, ImportProgress], dict[str, np.ndarray]]


def contract_here(graph: RoadGraph, parked: Path | None, label: str, progress: ImportProgress) -> dict[str, np.ndarray]:
    """The hierarchy (:func:`engine.routing.ch.build`) built in this process."""
    with progress.step(label, unit="CH nodes") as step:  # ch.build sets the total: edges and hubs
        return ch.build(graph, progress=step)


def _add_contraction_hierarchy(graph: RoadGraph, progress: ImportProgress, contract: Contraction) -> None:
    t0 = time.perf_counter()
    label = f"roads: contraction ({graph.meta.get('profile', 'car')})"
    park = graph.turn_to.shape[0] >= PARK_MIN_TURNS
    with tempfile.TemporaryDirectory(prefix="meridian-graph-") if park else nullcontext(None) as parked:
        if parked is not None:
            park_columns(graph, Path(parked))
        release_free_memory()  # what reading the file and building the columns freed
        ch_arrays = contract(graph, None if parked is None else Path(parked), label, progress)
    graph.meta["counts"]["ch_core"] = int(ch_arrays.pop("ch_core")[0])
    for k, v in ch_arrays.items():
        setattr(graph, k, v)
    graph.has_ch = True
    graph.meta["seconds"]["ch"] = round(time.perf_counter() - t0, 3)
    shortcuts = (ch_arrays["ch_up_mid"] >= 0).sum() + (ch_arrays["ch_dn_mid"] >= 0).sum()
    graph.meta["counts"]["ch_shortcuts"] = int(shortcuts)


def park_columns(graph: RoadGraph, directory: Path) -> None:
    """Replace the graph's columns by read-only maps of copies written to ``directory``: while
    the contraction runs, the columns it does not read (geometry, nodes, names) cost no memory,
    and those it reads are clean pages of a file. Saving the graph reads them back. The maps stay
    valid once the files are removed (their pages live as long as the maps)."""
    for name in ARRAYS:
        np.save(_parked_path(directory, name), np.ascontiguousarray(getattr(graph, name)))
        setattr(graph, name, np.load(_parked_path(directory, name), mmap_mode="r"))


def parked_graph(directory: Path) -> RoadGraph:
    """The graph whose columns :func:`park_columns` wrote to ``directory``, mapped (no names,
    no meta: what the contraction reads)."""
    return RoadGraph({name: np.load(_parked_path(directory, name), mmap_mode="r") for name in ARRAYS}, [], {})


def _parked_path(directory: Path, name: str) -> Path:
    return directory / f"{name}.npy"


def _profile_graph(
    path: Path,
    roads: OsmRoads,
    profile: Profile,
    t_read: float,
    with_ch: bool,
    progress: ImportProgress,
    log: logging.Logger | None,
    contract: Contraction,
) -> tuple[RoadGraph, dict[str, int]]:
    """One profile's graph from what the reading pass kept for it."""
    arrays, names = _graph_arrays(roads.ways, roads.node_penalty)
    roads.ways = []  # in the arrays now (a way's node lists are freed with the last profile's)
    arrays.update(_node_components(arrays))
    t1 = time.perf_counter()
    turns = build_turns(arrays, roads, profile)
    arrays.update(turns.arrays())
    arrays.update(_edge_components(arrays))
    seconds = {"read": round(t_read, 3), "turns": round(time.perf_counter() - t1, 3)}
    meta = _graph_meta(path, arrays, roads, turns, seconds)
    if profile is not CAR:  # the car's graph says nothing of profiles: it is what it always was
        meta["profile"] = profile.name
    n_turns = int(turns.to.shape[0])
    graph = RoadGraph(arrays, names, meta)
    # from here the graph alone holds the columns: the contraction parks them on disk, which frees
    # their memory only if no other name (the dict, the turn table and its wider originals) keeps them
    del arrays, turns
    if with_ch and graph.n_edges:
        _add_contraction_hierarchy(graph, progress, contract)
    counts = {
        "road_nodes": graph.n_nodes,
        "road_edges": graph.n_edges,
        "road_turns": n_turns,
        "turn_restrictions": len(roads.restrictions),
    }
    if log:
        log.info("roads (%s): %s", profile.name, graph.meta)
    return graph, counts


def iter_graphs(
    path: Path,
    profiles: tuple[Profile, ...] = (CAR,),
    *,
    with_ch: bool = True,
    log: logging.Logger | None = None,
    progress: ImportProgress | None = None,
    contract: Contraction = contract_here,
) -> Iterator[tuple[str, RoadGraph, dict[str, int]]]:
    """Each profile's road graph of an OSM file (one reading pass) and its counts for the
    manifest, one profile at a time: a caller that writes each graph and lets it go holds one
    profile's graph and contraction at a time, not all of them. ``contract`` builds each
    hierarchy (:data:`Contraction`)."""
    progress = progress or ImportProgress.silent()
    t0 = time.perf_counter()
    roads = read_osm(path, profiles, progress)
    t_read = time.perf_counter() - t0
    for p in profiles:
        # no name in this frame holds the graph while the caller has it: a caller that wrote it
        # can let it go (and does, before it computes the derived arrays from the written files)
        yield (p.name, *_profile_graph(path, roads.pop(p.name), p, t_read, with_ch, progress, log, contract))


def build_graphs(
    path: Path, profiles: tuple[Profile, ...] = (CAR,), *, with_ch: bool = True, log: logging.Logger | None = None
) -> dict[str, tuple[RoadGraph, dict[str, int]]]:
    """Each profile's road graph of an OSM file and its counts, all in memory (see :func:`iter_graphs`)."""
    return {name: (graph, counts) for name, graph, counts in iter_graphs(path, profiles, with_ch=with_ch, log=log)}


def build_graph(
    path: Path, *, profile: Profile = CAR, with_ch: bool = True, log: logging.Logger | None = None
) -> tuple[RoadGraph, dict[str, int]]:
    """The road graph of one profile (the car's by default) and the counts for the import manifest."""
    return build_graphs(path, (profile,), with_ch=with_ch, log=log)[profile.name]
