"""OSM PBF -> :class:`engine.routing.graph.RoadGraph` (the ``roads`` import stage's work).

The steps of :func:`build_graph`:

1. :func:`read_osm`: one streaming pass with pyosmium (node locations cached by osmium, a key
   pre-filter so Python only sees ways with ``highway``/``route``, tagged nodes and relations
   with ``type``): for each requested profile (:mod:`engine.routing.profiles`: car, foot,
   bicycle) the ways it may use, node penalties and barriers, the via-node turn restrictions
   that name it; the foot profile also gets each pedestrian area's outline and the straight
   crossings between its entry points (:func:`pedestrian_area_ways`).
2. :func:`_graph_node_refs` and :func:`_split_ways`: ways cut at graph nodes into directed edges.
3. :func:`_graph_arrays`: edges sorted by tail node, the CSR indexes and the geometry arrays.
4. Strongly connected components of the node graph, the turn graph (:func:`build_turns`: bearings,
   allowed turns and their costs) and its components, then the contraction hierarchy.

Steps 2-4 run once per profile (:func:`build_graphs`): each profile has its own graph.

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
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import osmium
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from engine.geo import haversine_m_np
from engine.progress import ImportProgress
from engine.routing import ch, foot
from engine.routing import profile as P
from engine.routing.graph import RoadGraph
from engine.routing.profiles import CAR, Profile

# tags the reading pass looks at (the pre-filter: objects with none of them never reach Python)
OSM_KEYS = ("highway", "barrier", "route", "type", "access", "foot", "bicycle")
AREA_MAX_ENTRIES = 12  # a pedestrian area with more entry points is walked along its outline only (each
# crossing adds turns at both ends: 40 entries tripled the contraction time of Helsinki's foot graph)

Arrays = dict[str, np.ndarray]


# -- 1. reading ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoadWay:
    """A drivable way, or one run of its nodes inside the extract when the extract cuts it."""

    id: int
    prof: P.WayProfile
    refs: list[int] = field(default_factory=list)
    lat: list[float] = field(default_factory=list)
    lng: list[float] = field(default_factory=list)


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


def _node_runs(way: osmium.osm.Way) -> tuple[list[tuple[list[int], list[float], list[float]]], bool]:
    """The way's runs of nodes inside the extract (refs, lat, lng) and whether any node is missing."""
    runs: list[tuple[list[int], list[float], list[float]]] = [([], [], [])]
    for nd in way.nodes:
        loc = nd.location
        if not loc.valid():
            if runs[-1][0]:
                runs.append(([], [], []))
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


def _graph_node_refs(ways: list[RoadWay], node_penalty: dict[int, float | None]) -> set[int]:
    """The OSM nodes that become graph nodes: shared nodes, way ends, nodes with a penalty or a
    barrier. The others are geometry only."""
    use: dict[int, int] = defaultdict(int)
    for w in ways:
        for r in w.refs:
            use[r] += 1
        use[w.refs[0]] += 1
        use[w.refs[-1]] += 1
    return {r for r, c in use.items() if c >= 2} | (set(node_penalty) & set(use))


class _NodeTable:
    """Graph nodes, numbered in the order they are first used."""

    def __init__(self) -> None:
        self.index: dict[int, int] = {}
        self.lat: list[float] = []
        self.lng: list[float] = []
        self.osm: list[int] = []

    def id_of(self, ref: int, lat: float, lng: float) -> int:
        i = self.index.get(ref)
        if i is None:
            i = self.index[ref] = len(self.osm)
            self.osm.append(ref)
            self.lat.append(lat)
            self.lng.append(lng)
        return i


@dataclass(frozen=True)
class EdgeGeometry:
    """An edge's points in travel direction, with the distance from its first point."""

    lat: np.ndarray
    lng: np.ndarray
    cum_m: np.ndarray


class _EdgeTable:
    """Directed edges, one column list per edge array, in the order they are made."""

    def __init__(self) -> None:
        self.tail: list[int] = []
        self.head: list[int] = []
        self.twin: list[int] = []
        self.length: list[float] = []
        self.duration: list[float] = []
        self.weight: list[float] = []
        self.cls: list[int] = []
        self.flags: list[int] = []
        self.way: list[int] = []
        self.name: list[int] = []
        self.geometry: list[EdgeGeometry] = []
        self.names: dict[str, int] = {"": 0}

    def name_id(self, name: str) -> int:
        return self.names.setdefault(name, len(self.names))

    def name_list(self) -> list[str]:
        """The street names by id (0 = unnamed)."""
        out = [""] * len(self.names)
        for name, i in self.names.items():
            out[i] = name
        return out

    def add(
        self, tail: int, head: int, geometry: EdgeGeometry, length: float, duration: float, way: RoadWay, name: int
    ) -> int:
        self.tail.append(tail)
        self.head.append(head)
        self.twin.append(-1)
        self.length.append(length)
        self.duration.append(duration)
        self.weight.append(duration * way.prof.weight_factor)
        self.cls.append(P.CLASS_CODE[way.prof.highway])
        self.flags.append(way.prof.flags)
        self.way.append(way.id)
        self.name.append(name)
        self.geometry.append(geometry)
        return len(self.tail) - 1

    def pair(self, forward: int, backward: int) -> None:
        if forward >= 0 and backward >= 0:
            self.twin[forward], self.twin[backward] = backward, forward


def _piece_durations(prof: P.WayProfile, length: float, way_length: float) -> tuple[float, float]:
    """Seconds forward and backward along a piece of a way (a ferry's tagged duration is shared
    among its pieces by length)."""
    if prof.ferry_duration_s is not None and way_length > 0:
        duration = prof.ferry_duration_s * length / way_length
        return duration, duration
    return length / (prof.speed_fwd_kmh / 3.6), length / (prof.speed_bwd_kmh / 3.6)


def _split_way(w: RoadWay, is_graph: set[int], nodes: _NodeTable, edges: _EdgeTable) -> None:
    """The way's pieces between graph nodes, as one edge per drivable direction."""
    prof = w.prof
    lat = np.asarray(w.lat, dtype=np.float64)
    lng = np.asarray(w.lng, dtype=np.float64)
    seg = haversine_m_np(lat[:-1], lng[:-1], lat[1:], lng[1:])
    cum_all = np.concatenate(([0.0], np.cumsum(seg)))
    way_length = float(cum_all[-1])
    name_id = edges.name_id(prof.name)
    cuts = [0] + [i for i in range(1, len(w.refs) - 1) if w.refs[i] in is_graph] + [len(w.refs) - 1]
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        if b <= a:
            continue
        plat, plng = lat[a : b + 1], lng[a : b + 1]
        cum = cum_all[a : b + 1] - cum_all[a]
        length = float(cum[-1])
        tail = nodes.id_of(w.refs[a], plat[0], plng[0])
        head = nodes.id_of(w.refs[b], plat[-1], plng[-1])
        if tail == head and length < 0.5:
            continue
        dur_f, dur_b = _piece_durations(prof, length, way_length)
        fwd = bwd = -1
        if prof.forward:
            fwd = edges.add(tail, head, EdgeGeometry(plat, plng, cum), length, dur_f, w, name_id)
        if prof.backward:
            backward = EdgeGeometry(plat[::-1].copy(), plng[::-1].copy(), length - cum[::-1])
            bwd = edges.add(head, tail, backward, length, dur_b, w, name_id)
        edges.pair(fwd, bwd)


def _split_ways(ways: list[RoadWay], is_graph: set[int]) -> tuple[_NodeTable, _EdgeTable]:
    nodes, edges = _NodeTable(), _EdgeTable()
    for w in ways:
        _split_way(w, is_graph, nodes, edges)
    return nodes, edges


# -- 3. arrays -----------------------------------------------------------------------------------


def _csr_first(index_of: np.ndarray, n: int) -> np.ndarray:
    """``first[v]:first[v+1]`` are the entries whose (sorted) index is v."""
    first = np.zeros(n + 1, dtype=np.int64)
    np.add.at(first, index_of.astype(np.int64) + 1, 1)
    return np.cumsum(first)


def _geometry_arrays(geoms: list[EdgeGeometry]) -> Arrays:
    sizes = np.array([len(g.lat) for g in geoms], dtype=np.int64)
    if not geoms:
        empty = np.zeros(0)
        return {
            "edge_geom_first": np.zeros(1, dtype=np.int64),
            "geom_lat": empty,
            "geom_lng": empty,
            "geom_cum_m": empty.astype(np.float32),
        }
    return {
        "edge_geom_first": np.concatenate(([0], np.cumsum(sizes))).astype(np.int64),
        "geom_lat": np.concatenate([g.lat for g in geoms]),
        "geom_lng": np.concatenate([g.lng for g in geoms]),
        "geom_cum_m": np.concatenate([g.cum_m for g in geoms]).astype(np.float32),
    }


def _graph_arrays(nodes: _NodeTable, edges: _EdgeTable) -> Arrays:
    """The node and edge arrays of :mod:`engine.routing.graph`, edges sorted by tail node."""
    n, m = len(nodes.osm), len(edges.tail)
    order = np.argsort(np.asarray(edges.tail, dtype=np.int32), kind="stable")
    new_id = np.empty(m, dtype=np.int64)
    new_id[order] = np.arange(m)

    def sorted_column(values: list[Any], dtype: Any) -> np.ndarray:
        return np.asarray(values, dtype=dtype)[order] if m else np.zeros(0, dtype=dtype)

    edge_tail = sorted_column(edges.tail, np.int32)
    edge_head = sorted_column(edges.head, np.int32)
    old_twin = sorted_column(edges.twin, np.int64)
    return {
        "node_lat": np.asarray(nodes.lat, dtype=np.float64),
        "node_lng": np.asarray(nodes.lng, dtype=np.float64),
        "node_osm": np.asarray(nodes.osm, dtype=np.int64),
        "node_first_out": _csr_first(edge_tail, n),
        "node_first_in": _csr_first(edge_head, n),
        "in_edges": np.argsort(edge_head, kind="stable").astype(np.int32),
        "edge_tail": edge_tail,
        "edge_head": edge_head,
        "edge_twin": np.where(old_twin >= 0, new_id[np.maximum(old_twin, 0)], -1).astype(np.int32),
        "edge_length_m": sorted_column(edges.length, np.float32),
        "edge_duration_s": sorted_column(edges.duration, np.float32),
        "edge_weight": sorted_column(edges.weight, np.float32),
        "edge_class": sorted_column(edges.cls, np.uint8),
        "edge_flags": sorted_column(edges.flags, np.uint8),
        "edge_way": sorted_column(edges.way, np.int64),
        "edge_name": sorted_column(edges.name, np.int32),
        **_geometry_arrays([edges.geometry[i] for i in order]),
    }


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
    deg = np.zeros(a["node_first_out"].shape[0] - 1, dtype=np.int64)
    for e in range(edge_head.shape[0]):
        tw = int(edge_twin[e])
        if tw < 0 or e < tw:
            deg[edge_tail[e]] += 1
            deg[edge_head[e]] += 1
    return deg


def _restrictions_by_via(
    a: Arrays, node_osm: list[int], restrictions: list[Restriction]
) -> dict[int, list[Restriction]]:
    """The restrictions that count, by via node: their from and to ways are drivable and meet at
    the via node (an only_* toward a way the car may not use would otherwise trap every arrival;
    OSRM drops such relations too)."""
    node_id = {osm: i for i, osm in enumerate(node_osm)}
    ways_at: dict[int, set[int]] = defaultdict(set)
    for e in range(a["edge_head"].shape[0]):
        ways_at[int(a["edge_head"][e])].add(int(a["edge_way"][e]))
        ways_at[int(a["edge_tail"][e])].add(int(a["edge_way"][e]))
    by_via: dict[int, list[Restriction]] = defaultdict(list)
    for r in restrictions:
        v = node_id.get(r.via_node)
        if v is None or r.from_way not in ways_at[v] or r.to_way not in ways_at[v]:
            continue
        by_via[r.via_node].append(r)
    return by_via


def _forbidden(rules: Iterable[Restriction], way_in: int, way_out: int) -> bool:
    """Whether a restriction at the node forbids going from ``way_in`` on to ``way_out``."""
    return any(
        r.from_way == way_in
        and ((r.kind == "no" and way_out == r.to_way) or (r.kind == "only" and way_out != r.to_way))
        for r in rules
    )


class _Turn(NamedTuple):
    to: int  # the next edge
    cost_s: float
    extra_weight: float  # added to the cost for the routing weight only


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
            "turn_first_out": self.first_out,
            "turn_to": self.to,
            "turn_cost_s": self.cost_s,
            "turn_weight": self.weight,
        }


class _TurnRules:
    """Which turns a car may take after an edge, and what each costs."""

    def __init__(self, a: Arrays, roads: OsmRoads, node_osm: list[int], profile: Profile = CAR) -> None:
        self.turn_duration_s = profile.turn_duration_s
        self.edge_head, self.edge_twin = a["edge_head"], a["edge_twin"]
        self.edge_way, self.edge_flags = a["edge_way"], a["edge_flags"]
        self.first_out = a["node_first_out"]
        self.node_osm = node_osm
        self.node_penalty = roads.node_penalty
        self.start_b, self.end_b = _edge_bearings(a)
        self.deg = _road_degree(a)
        self.by_via = _restrictions_by_via(a, node_osm, roads.restrictions)
        self.removed = 0
        self.mode_change_s = profile.mode_change_s
        self.pushed = _pushed_edges(a, profile)

    def turns_after(self, e: int) -> list[_Turn]:
        """Every edge leaving ``e``'s head except the U-turn, unless a barrier blocks the node or a
        restriction forbids it; at a dead end (or barrier), the U-turn when not forbidden."""
        v = int(self.edge_head[e])
        osm_v = self.node_osm[v]
        pen = self.node_penalty.get(osm_v, 0.0)
        blocked = osm_v in self.node_penalty and pen is None
        rules = self.by_via.get(osm_v, [])
        onward, uturns = [], []
        for f in range(int(self.first_out[v]), int(self.first_out[v + 1])):
            if f == self.edge_twin[e]:
                uturns.append(f)
            elif blocked:
                continue
            elif _forbidden(rules, self.edge_way[e], self.edge_way[f]):
                self.removed += 1
            else:
                onward.append(f)
        if onward:
            return [self._turn(e, f, v, pen or 0.0) for f in onward]
        uturn_s = self.turn_duration_s(180.0, n_roads=int(self.deg[v]), uturn=True, roundabout=False)
        return [_Turn(f, uturn_s, 0.0) for f in uturns if not _forbidden(rules, self.edge_way[e], self.edge_way[f])]

    def _turn(self, e: int, f: int, v: int, node_penalty_s: float) -> _Turn:
        angle = (self.start_b[f] - self.end_b[e] + 540.0) % 360.0 - 180.0
        flags_e, flags_f = self.edge_flags[e], self.edge_flags[f]
        rb = bool((flags_e | flags_f) & P.FLAG_ROUNDABOUT)
        cost = self.turn_duration_s(angle, n_roads=int(self.deg[v]), uturn=False, roundabout=rb)
        enters_restricted = (flags_f & P.FLAG_RESTRICTED) and not (flags_e & P.FLAG_RESTRICTED)
        extra = P.RESTRICTED_ENTRY_S if enters_restricted else 0.0
        if self.pushed[f] and not self.pushed[e]:
            extra += self.mode_change_s
        return _Turn(f, cost + node_penalty_s, extra)


def _pushed_edges(a: Arrays, profile: Profile) -> np.ndarray:
    """Per edge: travelled at or below the profile's pushing speed (a cyclist walking the bicycle);
    all False for a profile without a mode change penalty."""
    if not profile.mode_change_s:
        return np.zeros(a["edge_head"].shape[0], bool)
    length, duration = a["edge_length_m"].astype(np.float64), a["edge_duration_s"].astype(np.float64)
    kmh = np.divide(length, duration, out=np.full(length.shape, np.inf), where=duration > 0) * 3.6
    return np.asarray(kmh <= profile.pushing_kmh + 0.01)


def build_turns(a: Arrays, roads: OsmRoads, node_osm: list[int], profile: Profile = CAR) -> TurnTable:
    """The turn graph: for each edge the turns allowed after it (restrictions, barriers and the
    no-U-turn rule applied by leaving turns out), with their durations and routing weights."""
    rules = _TurnRules(a, roads, node_osm, profile)
    m = a["edge_head"].shape[0]
    first_out = np.zeros(m + 1, dtype=np.int64)
    turns: list[_Turn] = []
    for e in range(m):
        turns.extend(rules.turns_after(e))
        first_out[e + 1] = len(turns)
    cost = np.asarray([t.cost_s for t in turns], dtype=np.float64)
    extra = np.asarray([t.extra_weight for t in turns], dtype=np.float64)
    return TurnTable(
        first_out=first_out,
        to=np.asarray([t.to for t in turns], dtype=np.int32),
        cost_s=cost.astype(np.float32),
        weight=(cost + extra).astype(np.float32),
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


def _add_contraction_hierarchy(graph: RoadGraph, progress: ImportProgress) -> None:
    t0 = time.perf_counter()
    label = f"roads: contraction ({graph.meta.get('profile', 'car')})"
    with progress.step(label, total=graph.n_edges, unit="turn-graph nodes") as step:
        ch_arrays = ch.build(graph, progress=step)
    graph.meta["counts"]["ch_core"] = int(ch_arrays.pop("ch_core")[0])
    for k, v in ch_arrays.items():
        setattr(graph, k, v)
    graph.has_ch = True
    graph.meta["seconds"]["ch"] = round(time.perf_counter() - t0, 3)
    shortcuts = (ch_arrays["ch_up_mid"] >= 0).sum() + (ch_arrays["ch_dn_mid"] >= 0).sum()
    graph.meta["counts"]["ch_shortcuts"] = int(shortcuts)


def _profile_graph(
    path: Path, roads: OsmRoads, profile: Profile, t_read: float, with_ch: bool, progress: ImportProgress
) -> tuple[RoadGraph, dict[str, int]]:
    """One profile's graph from what the reading pass kept for it."""
    nodes, edges = _split_ways(roads.ways, _graph_node_refs(roads.ways, roads.node_penalty))
    arrays = _graph_arrays(nodes, edges)
    arrays.update(_node_components(arrays))
    t1 = time.perf_counter()
    turns = build_turns(arrays, roads, nodes.osm, profile)
    arrays.update(turns.arrays())
    arrays.update(_edge_components(arrays))
    seconds = {"read": round(t_read, 3), "turns": round(time.perf_counter() - t1, 3)}
    meta = _graph_meta(path, arrays, roads, turns, seconds)
    if profile is not CAR:  # the car's graph says nothing of profiles: it is what it always was
        meta["profile"] = profile.name
    graph = RoadGraph(arrays, edges.name_list(), meta)
    if with_ch and graph.n_edges:
        _add_contraction_hierarchy(graph, progress)
    counts = {
        "road_nodes": graph.n_nodes,
        "road_edges": graph.n_edges,
        "road_turns": int(turns.to.shape[0]),
        "turn_restrictions": len(roads.restrictions),
    }
    return graph, counts


def iter_graphs(
    path: Path,
    profiles: tuple[Profile, ...] = (CAR,),
    *,
    with_ch: bool = True,
    log: logging.Logger | None = None,
    progress: ImportProgress | None = None,
) -> Iterator[tuple[str, RoadGraph, dict[str, int]]]:
    """Each profile's road graph of an OSM file (one reading pass) and its counts for the
    manifest, one profile at a time: a caller that writes each graph and lets it go holds one
    profile's graph and contraction at a time, not all of them."""
    progress = progress or ImportProgress.silent()
    t0 = time.perf_counter()
    roads = read_osm(path, profiles, progress)
    t_read = time.perf_counter() - t0
    for p in profiles:
        graph, counts = _profile_graph(path, roads.pop(p.name), p, t_read, with_ch, progress)
        if log:
            log.info("roads (%s): %s", p.name, graph.meta)
        yield p.name, graph, counts
        del graph  # before the next profile's is built


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
