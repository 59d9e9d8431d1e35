"""OSM PBF -> :class:`engine.routing.graph.RoadGraph` (the ``roads`` import stage's work).

One streaming pass with pyosmium (node locations cached by osmium, a key pre-filter so Python
only sees ways with ``highway``/``route``, tagged nodes and relations with ``type``), the car
profile (:mod:`engine.routing.profile`) on every way, ways split at graph nodes, then the turn
graph with restrictions, strongly connected components and the contraction hierarchy.

Why not osmnx for the topology (the foundation issue suggested ``osmnx.graph_from_xml``), measured
on this machine (2026-11-22; highway ways + back-referenced nodes
written to XML with ``osmium.BackReferenceWriter``, then ``graph_from_xml(simplify=True)``):

=========  ===================================  ==========================================
sample     osmnx                                this module (pyosmium, profile, turns, SCC)
=========  ===================================  ==========================================
Monaco     1.07 s PBF->XML + 3.97 s osmnx       0.47 s (CH +0.1 s)
Helsinki   fails: "Some edges missing nodes,     0.30 s; ways cut by the extract boundary keep
           possibly due to input data clipping"  their runs of known nodes
=========  ===================================  ==========================================

osmnx would also still need the profile per direction (access:forward, oneway=-1, maxspeed
zones), node penalties/barriers and the restriction relations, which it does not read. networkx
is not used at query time either way.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from engine.geo import haversine_m_np
from engine.routing import profile as P
from engine.routing.graph import RoadGraph


class _Way:
    __slots__ = ("id", "prof", "refs", "lat", "lng")

    def __init__(self, wid, prof, refs, lat, lng):
        self.id, self.prof, self.refs, self.lat, self.lng = wid, prof, refs, lat, lng


def read_osm(path: Path):
    """Drivable ways, node penalties and via-node restrictions from an OSM file (PBF or XML)."""
    import osmium

    ways: list[_Way] = []
    node_pen: dict[int, float | None] = {}
    restrictions: list[tuple[str, int, int, int]] = []  # kind, from way, via node, to way
    skipped = {"restrictions_via_way": 0, "ways_missing_nodes": 0}
    fp = (
        osmium.FileProcessor(str(path))
        .with_locations()
        .with_filter(osmium.filter.KeyFilter("highway", "barrier", "route", "type", "access"))
    )
    for obj in fp:
        if obj.is_node():
            tags = {t.k: t.v for t in obj.tags}
            pen = P.node_penalty(tags)
            if pen is None or pen > 0:
                node_pen[obj.id] = pen
        elif obj.is_way():
            tags = {t.k: t.v for t in obj.tags}
            prof = P.way_profile(tags)
            if prof is None:
                continue
            # a way cut by the extract boundary keeps its runs of known nodes
            runs = [([], [], [])]
            for nd in obj.nodes:
                loc = nd.location
                if not loc.valid():
                    if runs[-1][0]:
                        runs.append(([], [], []))
                    continue
                runs[-1][0].append(nd.ref)
                runs[-1][1].append(loc.lat)
                runs[-1][2].append(loc.lon)
            if len(runs) > 1 or len(runs[0][0]) < len(obj.nodes):
                skipped["ways_missing_nodes"] += 1
            for refs, lat, lng in runs:
                if len(refs) >= 2:
                    ways.append(_Way(obj.id, prof, refs, lat, lng))
        elif obj.is_relation():
            tags = {t.k: t.v for t in obj.tags}
            kind = P.restriction_kind(tags)
            if kind is None:
                continue
            frm = via = to = None
            via_way = False
            for m in obj.members:
                if m.role == "from" and m.type == "w":
                    frm = m.ref
                elif m.role == "to" and m.type == "w":
                    to = m.ref
                elif m.role == "via":
                    if m.type == "n":
                        via = m.ref
                    else:
                        via_way = True
            if via_way:
                skipped["restrictions_via_way"] += 1
                continue
            if frm is not None and via is not None and to is not None:
                restrictions.append((kind, frm, via, to))
    return ways, node_pen, restrictions, skipped


def _bearing(lat1, lng1, lat2, lng2) -> float:
    dx = (lng2 - lng1) * math.cos(math.radians((lat1 + lat2) / 2))
    dy = lat2 - lat1
    return (math.degrees(math.atan2(dx, dy)) + 360.0) % 360.0


def build_graph(path: Path, *, with_ch: bool = True, log=None) -> tuple[RoadGraph, dict[str, int]]:
    t0 = time.perf_counter()
    ways, node_pen, restrictions, skipped = read_osm(path)
    t_read = time.perf_counter() - t0

    # graph nodes: shared nodes, way ends, nodes with a penalty or a barrier
    use = defaultdict(int)
    for w in ways:
        for r in w.refs:
            use[r] += 1
        use[w.refs[0]] += 1
        use[w.refs[-1]] += 1
    is_graph = {r for r, c in use.items() if c >= 2} | (set(node_pen) & set(use))
    node_index: dict[int, int] = {}
    node_lat: list[float] = []
    node_lng: list[float] = []
    node_osm: list[int] = []

    def nid(ref, lat, lng):
        i = node_index.get(ref)
        if i is None:
            i = node_index[ref] = len(node_osm)
            node_osm.append(ref)
            node_lat.append(lat)
            node_lng.append(lng)
        return i

    # edges (unsorted)
    e_tail, e_head, e_twin, e_len, e_dur, e_wt, e_cls, e_flg, e_way, e_name = ([] for _ in range(10))
    e_geom: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    names: dict[str, int] = {"": 0}

    def add_edge(tail, head, lat, lng, cum, length, dur, wt, cls, flg, way, name):
        e_tail.append(tail)
        e_head.append(head)
        e_twin.append(-1)
        e_len.append(length)
        e_dur.append(dur)
        e_wt.append(wt)
        e_cls.append(cls)
        e_flg.append(flg)
        e_way.append(way)
        e_name.append(name)
        e_geom.append((lat, lng, cum))
        return len(e_tail) - 1

    for w in ways:
        prof = w.prof
        lat = np.asarray(w.lat, dtype=np.float64)
        lng = np.asarray(w.lng, dtype=np.float64)
        seg = haversine_m_np(lat[:-1], lng[:-1], lat[1:], lng[1:])
        cum_all = np.concatenate(([0.0], np.cumsum(seg)))
        total = float(cum_all[-1])
        name_id = names.setdefault(prof.name, len(names))
        cls = P.CLASS_CODE[prof.highway]
        cuts = [0] + [i for i in range(1, len(w.refs) - 1) if w.refs[i] in is_graph] + [len(w.refs) - 1]
        for a, b in zip(cuts[:-1], cuts[1:], strict=True):
            if b <= a:
                continue
            plat, plng = lat[a : b + 1], lng[a : b + 1]
            cum = cum_all[a : b + 1] - cum_all[a]
            length = float(cum[-1])
            tail = nid(w.refs[a], plat[0], plng[0])
            head = nid(w.refs[b], plat[-1], plng[-1])
            if tail == head and length < 0.5:
                continue
            if prof.ferry_duration_s is not None and total > 0:
                dur_f = dur_b = prof.ferry_duration_s * length / total
            else:
                dur_f = length / (prof.speed_fwd_kmh / 3.6)
                dur_b = length / (prof.speed_bwd_kmh / 3.6)
            fwd = bwd = -1
            if prof.forward:
                fwd = add_edge(
                    tail,
                    head,
                    plat,
                    plng,
                    cum,
                    length,
                    dur_f,
                    dur_f * prof.weight_factor,
                    cls,
                    prof.flags,
                    w.id,
                    name_id,
                )
            if prof.backward:
                bwd = add_edge(
                    head,
                    tail,
                    plat[::-1].copy(),
                    plng[::-1].copy(),
                    length - cum[::-1],
                    length,
                    dur_b,
                    dur_b * prof.weight_factor,
                    cls,
                    prof.flags,
                    w.id,
                    name_id,
                )
            if fwd >= 0 and bwd >= 0:
                e_twin[fwd], e_twin[bwd] = bwd, fwd

    n = len(node_osm)
    m = len(e_tail)
    tail = np.asarray(e_tail, dtype=np.int32)
    order = np.argsort(tail, kind="stable")
    inv = np.empty(m, dtype=np.int64)
    inv[order] = np.arange(m)

    def perm(values, dtype):
        return np.asarray(values, dtype=dtype)[order] if m else np.zeros(0, dtype=dtype)

    edge_tail = perm(e_tail, np.int32)
    edge_head = perm(e_head, np.int32)
    twin_old = perm(e_twin, np.int64)
    edge_twin = np.where(twin_old >= 0, inv[np.maximum(twin_old, 0)], -1).astype(np.int32)
    node_first_out = np.zeros(n + 1, dtype=np.int64)
    np.add.at(node_first_out, edge_tail.astype(np.int64) + 1, 1)
    node_first_out = np.cumsum(node_first_out)
    in_order = np.argsort(edge_head, kind="stable").astype(np.int32)
    node_first_in = np.zeros(n + 1, dtype=np.int64)
    np.add.at(node_first_in, edge_head.astype(np.int64) + 1, 1)
    node_first_in = np.cumsum(node_first_in)

    geoms = [e_geom[i] for i in order]
    sizes = np.array([len(g[0]) for g in geoms], dtype=np.int64)
    edge_geom_first = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    geom_lat = np.concatenate([g[0] for g in geoms]) if m else np.zeros(0)
    geom_lng = np.concatenate([g[1] for g in geoms]) if m else np.zeros(0)
    geom_cum = (np.concatenate([g[2] for g in geoms]) if m else np.zeros(0)).astype(np.float32)

    arrays = {
        "node_lat": np.asarray(node_lat, dtype=np.float64),
        "node_lng": np.asarray(node_lng, dtype=np.float64),
        "node_osm": np.asarray(node_osm, dtype=np.int64),
        "node_first_out": node_first_out,
        "node_first_in": node_first_in,
        "in_edges": in_order,
        "edge_tail": edge_tail,
        "edge_head": edge_head,
        "edge_twin": edge_twin,
        "edge_length_m": perm(e_len, np.float32),
        "edge_duration_s": perm(e_dur, np.float32),
        "edge_weight": perm(e_wt, np.float32),
        "edge_class": perm(e_cls, np.uint8),
        "edge_flags": perm(e_flg, np.uint8),
        "edge_way": perm(e_way, np.int64),
        "edge_name": perm(e_name, np.int32),
        "edge_geom_first": edge_geom_first,
        "geom_lat": geom_lat,
        "geom_lng": geom_lng,
        "geom_cum_m": geom_cum,
    }

    # strongly connected components of the node graph
    if n:
        mat = csr_matrix((np.ones(m), (edge_tail, edge_head)), shape=(n, n))
        _, labels = connected_components(mat, directed=True, connection="strong")
        labels = labels.astype(np.int32)
        sizes_c = np.bincount(labels).astype(np.int32)
    else:
        labels = np.zeros(0, dtype=np.int32)
        sizes_c = np.zeros(0, dtype=np.int32)
    arrays["node_component"] = labels
    arrays["component_size"] = sizes_c

    t1 = time.perf_counter()
    turn_first_out, turn_to, turn_cost, turn_weight, n_restricted, start_b, end_b = _build_turns(
        arrays, node_pen, node_osm, restrictions
    )
    arrays["edge_bearing_start"] = start_b.astype(np.float32)
    arrays["edge_bearing_end"] = end_b.astype(np.float32)
    arrays["turn_first_out"] = turn_first_out
    arrays["turn_to"] = turn_to
    arrays["turn_cost_s"] = turn_cost
    arrays["turn_weight"] = turn_weight
    # strongly connected components of the turn graph: the real connectivity (one-ways, turn
    # restrictions, barriers); snapping prefers the big ones
    if m:
        tmat = csr_matrix((np.ones(turn_to.shape[0]), turn_to, turn_first_out), shape=(m, m))
        _, elabels = connected_components(tmat, directed=True, connection="strong")
        arrays["edge_component"] = elabels.astype(np.int32)
        arrays["edge_component_size"] = np.bincount(elabels).astype(np.int32)
    else:
        arrays["edge_component"] = np.zeros(0, dtype=np.int32)
        arrays["edge_component_size"] = np.zeros(0, dtype=np.int32)
    t_turns = time.perf_counter() - t1

    all_lat = arrays["geom_lat"]
    bbox = (
        [float(arrays["geom_lng"].min()), float(all_lat.min()), float(arrays["geom_lng"].max()), float(all_lat.max())]
        if m
        else None
    )
    name_list = [""] * len(names)
    for k, v in names.items():
        name_list[v] = k
    meta = {
        "source": str(path),
        "bbox": bbox,
        "counts": {"nodes": n, "edges": m, "turns": int(turn_to.shape[0]), "geometry_points": int(geom_lat.shape[0])},
        "restrictions": {"via_node": len(restrictions), "applied_turns_removed": n_restricted, **skipped},
        "seconds": {"read": round(t_read, 3), "turns": round(t_turns, 3)},
    }
    graph = RoadGraph(arrays, name_list, meta)
    if with_ch and m:
        from engine.routing import ch

        t2 = time.perf_counter()
        ch_arrays = ch.build(graph)
        meta["counts"]["ch_core"] = int(ch_arrays.pop("ch_core")[0])
        for k, v in ch_arrays.items():
            setattr(graph, k, v)
        graph.has_ch = True
        meta["seconds"]["ch"] = round(time.perf_counter() - t2, 3)
        meta["counts"]["ch_shortcuts"] = int(
            ch_arrays["ch_up_mid"].__ge__(0).sum() + ch_arrays["ch_dn_mid"].__ge__(0).sum()
        )
    counts = {
        "road_nodes": n,
        "road_edges": m,
        "road_turns": int(turn_to.shape[0]),
        "turn_restrictions": len(restrictions),
    }
    if log:
        log.info("roads: %s", meta)
    return graph, counts


def _build_turns(a: dict, node_pen: dict, node_osm: list[int], restrictions):
    edge_tail, edge_head, edge_twin = a["edge_tail"], a["edge_head"], a["edge_twin"]
    edge_way, edge_flags, edge_weight = a["edge_way"], a["edge_flags"], a["edge_weight"]
    first_out, first_in, in_edges = a["node_first_out"], a["node_first_in"], a["in_edges"]
    gf, glat, glng = a["edge_geom_first"], a["geom_lat"], a["geom_lng"]
    m = edge_head.shape[0]
    n = first_out.shape[0] - 1

    # bearings at both ends of each edge
    start_b = np.empty(m)
    end_b = np.empty(m)
    for e in range(m):
        s, t = int(gf[e]), int(gf[e + 1])
        start_b[e] = _bearing(glat[s], glng[s], glat[s + 1], glng[s + 1])
        end_b[e] = _bearing(glat[t - 2], glng[t - 2], glat[t - 1], glng[t - 1])

    # number of distinct road pieces at each node (twins count once)
    deg = np.zeros(n, dtype=np.int64)
    for e in range(m):
        tw = int(edge_twin[e])
        if tw < 0 or e < tw:
            deg[edge_tail[e]] += 1
            deg[edge_head[e]] += 1

    # a restriction counts only when its from and to ways are drivable and meet at the via node
    # (an only_* toward a way the car may not use would otherwise trap every arrival; OSRM drops
    # such relations too)
    node_id = {osm: i for i, osm in enumerate(node_osm)}
    ways_at: dict[int, set[int]] = defaultdict(set)
    for e in range(m):
        ways_at[int(edge_head[e])].add(int(edge_way[e]))
        ways_at[int(edge_tail[e])].add(int(edge_way[e]))
    by_via: dict[int, list[tuple[str, int, int]]] = defaultdict(list)
    for kind, frm, via, to in restrictions:
        v = node_id.get(via)
        if v is None or frm not in ways_at[v] or to not in ways_at[v]:
            continue
        by_via[via].append((kind, frm, to))

    t_first = np.zeros(m + 1, dtype=np.int64)
    t_to: list[int] = []
    t_cost: list[float] = []
    t_extra: list[float] = []
    removed = 0
    for e in range(m):
        v = int(edge_head[e])
        osm_v = node_osm[v]
        pen = node_pen.get(osm_v, 0.0)
        blocked = osm_v in node_pen and pen is None
        rules = by_via.get(osm_v, ())
        cands = []
        uturn_edges = []
        for f in range(int(first_out[v]), int(first_out[v + 1])):
            if f == edge_twin[e]:
                uturn_edges.append(f)
                continue
            if blocked:
                continue
            ok = True
            for kind, frm, to in rules:
                if frm != edge_way[e]:
                    continue
                if (kind == "no" and edge_way[f] == to) or (kind == "only" and edge_way[f] != to):
                    ok = False
                    break
            if not ok:
                removed += 1
                continue
            cands.append(f)
        if not cands:
            # dead end (or barrier): U-turn allowed, if no restriction forbids it
            for f in uturn_edges:
                if any(
                    frm == edge_way[e] and ((k == "no" and edge_way[f] == to) or (k == "only" and edge_way[f] != to))
                    for k, frm, to in rules
                ):
                    continue
                t_to.append(f)
                t_cost.append(P.turn_duration_s(180.0, n_roads=int(deg[v]), uturn=True, roundabout=False))
                t_extra.append(0.0)
        for f in cands:
            angle = (start_b[f] - end_b[e] + 540.0) % 360.0 - 180.0
            rb = bool((edge_flags[e] | edge_flags[f]) & P.FLAG_ROUNDABOUT)
            cost = P.turn_duration_s(angle, n_roads=int(deg[v]), uturn=False, roundabout=rb)
            t_to.append(f)
            t_cost.append(cost + (pen or 0.0))
            t_extra.append(
                P.RESTRICTED_ENTRY_S
                if (edge_flags[f] & P.FLAG_RESTRICTED) and not (edge_flags[e] & P.FLAG_RESTRICTED)
                else 0.0
            )
        t_first[e + 1] = len(t_to)
    del in_edges, first_in, edge_weight
    return (
        t_first,
        np.asarray(t_to, dtype=np.int32),
        np.asarray(t_cost, dtype=np.float32),
        (np.asarray(t_cost, dtype=np.float64) + np.asarray(t_extra, dtype=np.float64)).astype(np.float32),
        removed,
        start_b,
        end_b,
    )
