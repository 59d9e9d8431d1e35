"""Draw a map in a test: an ASCII grid of node letters -> an OSM file (PBF or XML) for the import.

The idea is Valhalla's gurka tests: nodes are single characters (letters or digits) placed on a
character grid, one cell = ``grid_m`` metres (east to the right, north up); the lines and dashes
in the drawing are only for the reader. Ways, node tags and relations are declared by node
letters::

    m = OsmGrid('''
        A----B----C
             |
             D----E
    ''', grid_m=10)
    main = m.way("ABC", highway="residential", name="Main Street")
    side = m.way("BDE", highway="service", access="private")
    m.node("B", highway="traffic_signals")
    m.restriction("no_left_turn", from_way=main, via="B", to_way=side)
    path = m.write(tmp_path / "map.osm.pbf")     # ".osm" writes XML
    lat, lng = m.coord("D")                       # where D is
    lat, lng = m.coord_between("A", "B", 0.25)    # a quarter of the way from A to B

Node ids are ``1000 + index`` in order of appearance, way ids start at 100, relation ids at 900
(``m.node_id("A")``). The grid is anchored at ``origin`` (lat, lng of the top-left cell).
Reusable by routing, map matching, isochrone and geofence tests.
"""

from __future__ import annotations

import math
from pathlib import Path

EARTH_M_PER_DEG = math.pi * 6_371_008.8 / 180.0


class OsmGrid:
    def __init__(self, drawing: str, *, grid_m: float = 10.0, origin: tuple[float, float] = (43.7300, 7.4200)):
        self.grid_m = grid_m
        self.origin = origin
        self.nodes: dict[str, tuple[float, float]] = {}
        self.ids: dict[str, int] = {}
        self.node_tags: dict[str, dict[str, str]] = {}
        self.ways: list[tuple[int, list[str], dict[str, str]]] = []
        self.relations: list[tuple[int, list[tuple[str, int, str]], dict[str, str]]] = []
        lines = drawing.strip("\n").splitlines()
        indent = min((len(ln) - len(ln.lstrip()) for ln in lines if ln.strip()), default=0)
        lat0, lng0 = origin
        k_lng = EARTH_M_PER_DEG * math.cos(math.radians(lat0))
        for row, line in enumerate(lines):
            for col, ch in enumerate(line[indent:]):
                if ch.isalnum():
                    if ch in self.nodes:
                        raise ValueError(f"node {ch!r} drawn twice")
                    lat = lat0 - row * grid_m / EARTH_M_PER_DEG
                    lng = lng0 + col * grid_m / k_lng
                    self.nodes[ch] = (lat, lng)
                    self.ids[ch] = 1000 + len(self.ids)
        self._next_way = 100
        self._next_rel = 900

    # -- declarations
    def add_node(self, name: str, lat: float, lng: float) -> int:
        """A node placed by coordinates (names may then be longer than one character)."""
        if name in self.nodes:
            raise ValueError(f"node {name!r} exists")
        self.nodes[name] = (lat, lng)
        self.ids[name] = 1000 + len(self.ids)
        return self.ids[name]

    def node(self, name: str, **tags: str) -> int:
        self.node_tags.setdefault(name, {}).update({k.replace("__", ":"): str(v) for k, v in tags.items()})
        return self.ids[name]

    def way(self, names: str | list[str], **tags: str) -> int:
        """A way through the named nodes in order (a string of one-letter names, or a list);
        ``foo__bar=`` gives tag ``foo:bar``."""
        for n in names:
            if n not in self.nodes:
                raise KeyError(f"node {n!r} is not in the drawing")
        wid = self._next_way
        self._next_way += 1
        self.ways.append((wid, list(names), {k.replace("__", ":"): str(v) for k, v in tags.items()}))
        return wid

    def relation(self, members: list[tuple[str, int | str, str]], **tags: str) -> int:
        """Members as (type "n"/"w"/"r", id or node letter, role)."""
        rid = self._next_rel
        self._next_rel += 1
        resolved = [(t, self.ids[r] if isinstance(r, str) else int(r), role) for t, r, role in members]
        self.relations.append((rid, resolved, {k.replace("__", ":"): str(v) for k, v in tags.items()}))
        return rid

    def restriction(self, kind: str, *, from_way: int, via: str, to_way: int, **tags: str) -> int:
        return self.relation(
            [("w", from_way, "from"), ("n", via, "via"), ("w", to_way, "to")],
            type="restriction",
            restriction=kind,
            **tags,
        )

    # -- geometry helpers
    def node_id(self, name: str) -> int:
        return self.ids[name]

    def coord(self, name: str) -> tuple[float, float]:
        return self.nodes[name]

    def coord_between(self, a: str, b: str, t: float = 0.5) -> tuple[float, float]:
        (la, ga), (lb, gb) = self.nodes[a], self.nodes[b]
        return la + t * (lb - la), ga + t * (gb - ga)

    def offset(self, name: str, north_m: float = 0.0, east_m: float = 0.0) -> tuple[float, float]:
        lat, lng = self.nodes[name]
        return (lat + north_m / EARTH_M_PER_DEG, lng + east_m / (EARTH_M_PER_DEG * math.cos(math.radians(lat))))

    # -- output
    def write(self, path: Path) -> Path:
        """Write the map; the extension picks the format (``.osm.pbf`` or ``.osm``)."""
        import osmium
        from osmium.osm import mutable

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.unlink()
        used = set(self.node_tags)
        for _, names, _ in self.ways:
            used.update(names)
        writer = osmium.SimpleWriter(str(path))
        try:
            for name, nid in sorted(self.ids.items(), key=lambda kv: kv[1]):
                if name not in used:
                    continue
                lat, lng = self.nodes[name]
                writer.add_node(mutable.Node(id=nid, location=(lng, lat), tags=self.node_tags.get(name, {}), version=1))
            for wid, names, tags in self.ways:
                writer.add_way(mutable.Way(id=wid, nodes=[self.ids[n] for n in names], tags=tags, version=1))
            for rid, members, tags in self.relations:
                writer.add_relation(mutable.Relation(id=rid, members=members, tags=tags, version=1))
        finally:
            writer.close()
        return path
