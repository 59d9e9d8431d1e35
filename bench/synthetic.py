"""Synthetic road networks of any size, written as an OSM PBF (for the scaling benchmark).

A grid-like city of ``n x n`` intersections, blocks of ``block_m`` metres, deterministic from a
seed:

* road classes by line index: ``primary`` every ``k_primary`` lines (``maxspeed=50``, ``ref``),
  ``secondary`` every ``k_secondary`` lines, ``residential`` elsewhere;
* residential lines with ``index % k_secondary == 2`` are one-way, the direction rotating
  through ``oneway=yes`` (forward), ``oneway=yes`` with the node order reversed and
  ``oneway=-1``, so every way of tagging a one-way appears;
* every street is named (rows "12th Street", columns "Avenue C7");
* ways are split at primary crossings (``k_primary`` blocks per way), as mappers do;
* one shape node per block, moved a few metres off the straight line, and intersections
  jittered by a few metres, so geometry is not perfectly regular;
* ``highway=traffic_signals`` at primary x (primary | secondary) crossings;
* a few turn restrictions (``no_left_turn``, ``no_u_turn``, ``only_straight_on``) at interior
  primary x primary crossings, where all four arms are distinct ways ending at the via node.

Rows run east-west (row index grows northward), columns north-south (index grows eastward).
The node count is ``n*n + 2*n*(n-1)`` (intersections + one shape node per block), so ``n`` is
chosen to get close to the requested target.

    python -m bench.synthetic --nodes 10000 --out /tmp/x.osm.pbf [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import osmium
from osmium.osm.mutable import Node, Relation, Way

from engine.geo import EARTH_RADIUS_M

# Somewhere in the Atlantic: no real extract overlaps it.
DEFAULT_ORIGIN = (10.0, -30.0)


@dataclass
class SyntheticCity:
    n: int
    block_m: float
    lat: np.ndarray  # node latitude by node id - 1
    lng: np.ndarray
    node_tags: dict[int, dict[str, str]]
    ways: list[tuple[int, list[int], dict[str, str]]]  # (way id, node ids, tags)
    restrictions: list[tuple[int, int, int, int, str]] = field(default_factory=list)
    # (relation id, from way, via node, to way, restriction)

    @property
    def node_count(self) -> int:
        return int(self.lat.size)

    def intersection_id(self, row: int, col: int) -> int:
        return row * self.n + col + 1

    def bbox(self) -> tuple[float, float, float, float]:
        return float(self.lng.min()), float(self.lat.min()), float(self.lng.max()), float(self.lat.max())


def grid_size_for(target_nodes: int) -> int:
    """Smallest ``n`` with ``n*n + 2*n*(n-1) >= target_nodes`` (3n^2 - 2n)."""
    n = max(2, int(math.ceil((2 + math.sqrt(4 + 12 * target_nodes)) / 6)))
    while n > 2 and 3 * (n - 1) ** 2 - 2 * (n - 1) >= target_nodes:
        n -= 1
    return n


def road_class(index: int, k_primary: int, k_secondary: int) -> str:
    if index % k_primary == 0:
        return "primary"
    if index % k_secondary == 0:
        return "secondary"
    return "residential"


def _ordinal(i: int) -> str:
    suffix = "th" if 10 <= i % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(i % 10, "th")
    return f"{i}{suffix}"


def _column_name(c: int) -> str:
    letters = ""
    x = c
    while True:
        letters = chr(ord("A") + x % 26) + letters
        x = x // 26 - 1
        if x < 0:
            break
    return f"Avenue {letters}"


def generate(
    target_nodes: int,
    seed: int = 1,
    *,
    block_m: float = 100.0,
    k_primary: int = 8,
    k_secondary: int = 4,
    origin: tuple[float, float] = DEFAULT_ORIGIN,
    restriction_share: float = 0.15,
) -> SyntheticCity:
    n = grid_size_for(target_nodes)
    rng = np.random.default_rng(seed)
    lat0, lng0 = origin
    ky = 180.0 / (math.pi * EARTH_RADIUS_M)  # degrees per metre north
    kx = ky / math.cos(math.radians(lat0))  # degrees per metre east

    # intersections (row-major), jittered by up to 4 m
    rows, cols = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    ix = cols.ravel() * block_m + rng.uniform(-4, 4, n * n)
    iy = rows.ravel() * block_m + rng.uniform(-4, 4, n * n)
    # shape nodes: horizontal blocks (r, c)-(r, c+1), then vertical blocks (r, c)-(r+1, c)
    hr, hc = np.meshgrid(np.arange(n), np.arange(n - 1), indexing="ij")
    ha, hb = (hr * n + hc).ravel(), (hr * n + hc + 1).ravel()
    vr, vc = np.meshgrid(np.arange(n - 1), np.arange(n), indexing="ij")
    va, vb = (vr * n + vc).ravel(), ((vr + 1) * n + vc).ravel()
    hx = (ix[ha] + ix[hb]) / 2 + rng.uniform(-3, 3, ha.size)
    hy = (iy[ha] + iy[hb]) / 2 + rng.uniform(-8, 8, ha.size)
    vx = (ix[va] + ix[vb]) / 2 + rng.uniform(-8, 8, va.size)
    vy = (iy[va] + iy[vb]) / 2 + rng.uniform(-3, 3, va.size)
    x = np.concatenate([ix, hx, vx])
    y = np.concatenate([iy, hy, vy])
    lat = lat0 + y * ky
    lng = lng0 + x * kx
    h_base = n * n + 1  # id of the shape node of horizontal block (r, c): h_base + r*(n-1) + c
    v_base = h_base + n * (n - 1)  # vertical block (r, c): v_base + r*n + c

    def inter(r: int, c: int) -> int:
        return r * n + c + 1

    ways: list[tuple[int, list[int], dict[str, str]]] = []
    way_at: dict[tuple[str, int, int], int] = {}  # ("h", row, chunk) / ("v", col, chunk) -> id
    node_tags: dict[int, dict[str, str]] = {}

    def line_tags(kind: str, index: int) -> tuple[dict[str, str], bool]:
        cls = road_class(index, k_primary, k_secondary)
        tags = {"highway": cls}
        tags["name"] = f"{_ordinal(index + 1)} Street" if kind == "h" else _column_name(index)
        reverse = False
        if cls == "primary":
            tags["maxspeed"] = "50"
            tags["ref"] = f"{'P' if kind == 'h' else 'Q'}{index // k_primary + 1}"
        elif cls == "residential" and index % k_secondary == 2:
            mode = (index // k_secondary) % 3
            if mode == 0:
                tags["oneway"] = "yes"
            elif mode == 1:
                tags["oneway"] = "yes"
                reverse = True
            else:
                tags["oneway"] = "-1"
        return tags, reverse

    way_id = 1
    for kind in ("h", "v"):
        for index in range(n):
            tags, reverse = line_tags(kind, index)
            for chunk, start in enumerate(range(0, n - 1, k_primary)):
                end = min(start + k_primary, n - 1)
                refs: list[int] = []
                for j in range(start, end):
                    if kind == "h":
                        refs += [inter(index, j), h_base + index * (n - 1) + j]
                    else:
                        refs += [inter(j, index), v_base + j * n + index]
                refs.append(inter(index, end) if kind == "h" else inter(end, index))
                if reverse:
                    refs.reverse()
                ways.append((way_id, refs, dict(tags)))
                way_at[(kind, index, chunk)] = way_id
                way_id += 1

    for r in range(0, n, k_primary):
        for c in range(0, n, k_secondary):
            if road_class(c, k_primary, k_secondary) != "residential":
                node_tags[inter(r, c)] = {"highway": "traffic_signals"}
    for c in range(0, n, k_primary):
        for r in range(0, n, k_secondary):
            node_tags[inter(r, c)] = {"highway": "traffic_signals"}

    # turn restrictions at interior primary x primary crossings (every arm ends there)
    pick = random.Random(seed)
    restrictions: list[tuple[int, int, int, int, str]] = []
    rel_id = 1
    for r in range(k_primary, n - 1, k_primary):
        for c in range(k_primary, n - 1, k_primary):
            if pick.random() >= restriction_share:
                continue
            west = way_at[("h", r, c // k_primary - 1)]
            east = way_at[("h", r, c // k_primary)]
            south = way_at[("v", c, r // k_primary - 1)]
            north = way_at[("v", c, r // k_primary)]
            kind = pick.choice(("no_left_turn", "no_u_turn", "only_straight_on"))
            if kind == "no_left_turn":  # eastbound from the west arm may not turn north
                frm, to = west, north
            elif kind == "no_u_turn":
                frm, to = south, south
            else:  # westbound from the east arm must go straight on (west)
                frm, to = east, west
            restrictions.append((rel_id, frm, inter(r, c), to, kind))
            rel_id += 1

    return SyntheticCity(n, block_m, lat, lng, node_tags, ways, restrictions)


def write_pbf(city: SyntheticCity, out: Path, *, overwrite: bool = True) -> None:
    out = Path(out)
    if overwrite and out.exists():
        out.unlink()
    header = osmium.io.Header()
    min_lng, min_lat, max_lng, max_lat = city.bbox()
    header.add_box(osmium.osm.Box(osmium.osm.Location(min_lng, min_lat), osmium.osm.Location(max_lng, max_lat)))
    header.set("generator", "meridian bench.synthetic")
    lat = city.lat.tolist()
    lng = city.lng.tolist()
    tags_for = city.node_tags
    with osmium.SimpleWriter(str(out), header=header) as writer:
        for i in range(len(lat)):
            nid = i + 1
            tags = tags_for.get(nid)
            if tags:
                writer.add_node(Node(id=nid, location=(lng[i], lat[i]), tags=tags, version=1))
            else:
                writer.add_node(Node(id=nid, location=(lng[i], lat[i]), version=1))
        for wid, refs, tags in city.ways:
            writer.add_way(Way(id=wid, nodes=refs, tags=tags, version=1))
        for rid, frm, via, to, kind in city.restrictions:
            writer.add_relation(
                Relation(
                    id=rid,
                    members=[("w", frm, "from"), ("n", via, "via"), ("w", to, "to")],
                    tags={"type": "restriction", "restriction": kind},
                    version=1,
                )
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, required=True, help="target node count")
    parser.add_argument("--out", type=Path, required=True, help="output .osm.pbf")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--block", type=float, default=100.0, help="block length (m)")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    city = generate(args.nodes, args.seed, block_m=args.block)
    t1 = time.perf_counter()
    write_pbf(city, args.out)
    t2 = time.perf_counter()
    print(
        f"{args.out}: grid {city.n}x{city.n}, {city.node_count} nodes, {len(city.ways)} ways, "
        f"{len(city.restrictions)} restrictions, {args.out.stat().st_size / 1e6:.1f} MB "
        f"(generate {t1 - t0:.1f}s, write {t2 - t1:.1f}s)"
    )


if __name__ == "__main__":
    main()
