"""What a search index holds, on a synthetic city (bench/synthetic.py): names, addresses, POIs.

* districts: squares of ``k_primary`` x ``k_primary`` blocks (the primary-road grid), each with its
  own postcode (``10000 + district``); towns: 4 x 4 districts, named from their own pool;
* street names: a pool of ``street_names`` distinct names (default 3,000 + one per 100 addresses:
  the vocabulary grows with the area, as real countries' does), drawn per district with Zipf-like
  weights, so 'Church Road'-like names recur in many districts; every way chunk takes the name its
  district gives its line (so one name is many streets, kept apart by distance at import);
* house numbers along both sides of every way, 15 m off the centre line, odd on the left and even
  on the right counted from the chunk's west/south end, 3 % with a letter ('12b');
* POIs: one of 14 categories (amenity/shop/tourism tags), chain names for chain-like categories
  (supermarkets, fuel, fast food, banks) and '<stem> <kind>' names for the rest, next to an address
  whose addr:* tags half of them carry.

Everything is numpy arrays (5M addresses fit in a few hundred MB); OSM tags are made while
writing (``SearchLayer.nodes``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

ONSETS = [
    "b",
    "bl",
    "br",
    "c",
    "ch",
    "cl",
    "cr",
    "d",
    "dr",
    "f",
    "fl",
    "fr",
    "g",
    "gl",
    "gr",
    "h",
    "j",
    "k",
    "l",
    "m",
    "n",
    "p",
    "pl",
    "pr",
    "r",
    "s",
    "sc",
    "sh",
    "sl",
    "st",
    "t",
    "th",
    "tr",
    "v",
    "w",
    "wh",
    "y",
    "z",
]
VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ee", "oa", "ou"]
CODAS = [
    "b",
    "ck",
    "d",
    "ff",
    "g",
    "l",
    "ll",
    "m",
    "n",
    "nd",
    "ng",
    "nt",
    "p",
    "r",
    "rn",
    "rt",
    "s",
    "ss",
    "st",
    "t",
    "th",
    "x",
]
STREET_TYPES = (
    "Street",
    "Road",
    "Lane",
    "Avenue",
    "Way",
    "Drive",
    "Close",
    "Gardens",
    "Grove",
    "Terrace",
    "Place",
    "Hill",
    "Row",
    "Crescent",
    "Walk",
)
TOWN_ENDINGS = ("ton", "ford", "field", "bury", "ham", "wick", "by", "stead")
# (OSM key, value, name style): "chain" takes a brand name, else "<stem> <label>"
POI_KINDS = (
    ("amenity", "restaurant", "Restaurant"),
    ("amenity", "cafe", "Cafe"),
    ("amenity", "fast_food", "chain"),
    ("amenity", "pharmacy", "Pharmacy"),
    ("amenity", "school", "School"),
    ("amenity", "bank", "chain"),
    ("amenity", "fuel", "chain"),
    ("amenity", "dentist", "Dental"),
    ("amenity", "library", "Library"),
    ("shop", "supermarket", "chain"),
    ("shop", "bakery", "Bakery"),
    ("shop", "convenience", "chain"),
    ("shop", "clothes", "Boutique"),
    ("tourism", "hotel", "Hotel"),
)
BRANDS = 60


def _stems(count: int, rng: np.random.Generator) -> list[str]:
    """``count`` distinct pronounceable words, 2 or 3 syllables, capitalised."""
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < count:
        k = 2 if rng.random() < 0.7 else 3
        word = "".join(
            ONSETS[rng.integers(len(ONSETS))] + VOWELS[rng.integers(len(VOWELS))] + CODAS[rng.integers(len(CODAS))]
            for _ in range(k)
        ).capitalize()
        if word not in seen:
            seen.add(word)
            out.append(word)
    return out


def _zipf_cdf(count: int, exponent: float = 0.9) -> np.ndarray:
    w = 1.0 / np.arange(1, count + 1) ** exponent
    cdf: np.ndarray = np.cumsum(w) / w.sum()
    return cdf


@dataclass
class SearchLayer:
    street_names: list[str]
    town_names: list[str]
    districts_per_row: int
    addr_lat: np.ndarray
    addr_lng: np.ndarray
    addr_street: np.ndarray  # index into street_names
    addr_number: np.ndarray
    addr_letter: np.ndarray  # 0: none, 1..: 'a'..
    addr_district: np.ndarray
    poi_lat: np.ndarray
    poi_lng: np.ndarray
    poi_kind: np.ndarray  # index into POI_KINDS
    poi_name: list[str]
    poi_address: np.ndarray  # index of the address whose addr:* tags it carries, -1: none
    town_boxes: list[tuple[float, float, float, float]]  # (min_lng, min_lat, max_lng, max_lat) by town

    @property
    def address_count(self) -> int:
        return int(self.addr_lat.size)

    @property
    def poi_count(self) -> int:
        return int(self.poi_lat.size)

    def postcode(self, district: int) -> str:
        return f"{10000 + district:05d}"

    def town(self, district: int) -> str:
        row, col = divmod(district, self.districts_per_row)
        towns_per_row = (self.districts_per_row + 3) // 4
        return self.town_names[(row // 4) * towns_per_row + col // 4]

    def address(self, i: int) -> dict[str, str]:
        """The addr:* tags of address ``i``."""
        letter = int(self.addr_letter[i])
        district = int(self.addr_district[i])
        return {
            "addr:housenumber": f"{int(self.addr_number[i])}{chr(96 + letter) if letter else ''}",
            "addr:street": self.street_names[int(self.addr_street[i])],
            "addr:postcode": self.postcode(district),
            "addr:city": self.town(district),
        }

    def boundaries(
        self, first_node: int, first_way: int, first_relation: int
    ) -> Iterator[tuple[list[tuple[int, tuple[float, float]]], tuple[int, list[int]], tuple[int, dict[str, str]]]]:
        """Each town as an admin_level=8 boundary: (its 4 corner nodes (id, (lng, lat)), its closed
        way (id, refs), its relation (id, tags)); the relation's one member is the way, outer."""
        for k, (x0, y0, x1, y1) in enumerate(self.town_boxes):
            ids = [first_node + 4 * k + j for j in range(4)]
            corners = list(zip(ids, [(x0, y0), (x1, y0), (x1, y1), (x0, y1)], strict=True))
            tags = {"type": "boundary", "boundary": "administrative", "admin_level": "8", "name": self.town_names[k]}
            yield corners, (first_way + k, [*ids, ids[0]]), (first_relation + k, tags)

    def nodes(self, first_id: int) -> Iterator[tuple[int, tuple[float, float], dict[str, str]]]:
        """(node id, (lng, lat), tags) of every address, then every POI, ids from ``first_id``."""
        nid = first_id
        for i, (lat, lng) in enumerate(zip(self.addr_lat.tolist(), self.addr_lng.tolist(), strict=True)):
            yield nid, (lng, lat), self.address(i)
            nid += 1
        for i, (lat, lng) in enumerate(zip(self.poi_lat.tolist(), self.poi_lng.tolist(), strict=True)):
            key, value, _style = POI_KINDS[int(self.poi_kind[i])]
            tags = {key: value, "name": self.poi_name[i]}
            a = int(self.poi_address[i])
            if a >= 0:
                tags.update(self.address(a))
            yield nid, (lng, lat), tags
            nid += 1


def populate(
    ways: list[tuple[int, list[int], dict[str, str]]],
    lat: np.ndarray,
    lng: np.ndarray,
    *,
    n: int,
    k_primary: int,
    addresses: int,
    pois: int,
    street_names: int | None,
    seed: int,
    kx: float,
    ky: float,
    origin: tuple[float, float],
    block_m: float,
) -> SearchLayer:
    """Rename the ways (their ``name`` tag, in place) after their district and place ``addresses``
    house numbers and ``pois`` POIs along them."""
    rng = np.random.default_rng(seed + 1000)
    pool = street_names or 3000 + addresses // 100
    stems = _stems(pool + 400, rng)
    names = [f"{stems[i]} {STREET_TYPES[int(rng.integers(len(STREET_TYPES)))]}" for i in range(pool)]
    per_row = (n + k_primary - 1) // k_primary
    towns_per_row = (per_row + 3) // 4
    town_names = [stems[pool + i % 400] + TOWN_ENDINGS[i % len(TOWN_ENDINGS)] for i in range(towns_per_row**2)]
    cdf = _zipf_cdf(pool)

    # each district names its 2 * k_primary lines with distinct names from the pool
    district_names: dict[int, np.ndarray] = {}

    def names_of(district: int) -> np.ndarray:
        found = district_names.get(district)
        if found is None:
            draw = np.searchsorted(cdf, rng.random(8 * k_primary))
            _, first = np.unique(draw, return_index=True)
            found = draw[np.sort(first)]
            while found.size < 2 * k_primary:  # rare: too many repeats among the draws
                found = np.unique(np.concatenate([found, rng.integers(0, pool, 2 * k_primary)]))
            district_names[district] = found[: 2 * k_primary]
        return district_names[district]

    # (district, name index, end points) of every way
    way_name = np.empty(len(ways), dtype=np.int64)
    way_district = np.empty(len(ways), dtype=np.int64)
    ends = np.empty((len(ways), 2), dtype=np.int64)
    for k, (_wid, refs, tags) in enumerate(ways):
        a, b = sorted((refs[0] - 1, refs[-1] - 1))
        ra, ca = divmod(a, n)
        rb, _cb = divmod(b, n)
        horizontal = ra == rb
        district = (ra // k_primary) * per_row + ca // k_primary
        slot = (ra % k_primary) if horizontal else k_primary + (ca % k_primary)
        name = int(names_of(district)[slot])
        tags["name"] = names[name]
        way_name[k], way_district[k], ends[k] = name, district, (a, b)

    # house numbers: per way side, a count proportional to its length
    x0, y0 = lng[ends[:, 0]], lat[ends[:, 0]]
    x1, y1 = lng[ends[:, 1]], lat[ends[:, 1]]
    length = np.hypot((x1 - x0) / kx, (y1 - y0) / ky)
    share = length / length.sum()
    per_side = np.floor(share * addresses / 2).astype(np.int64)
    short = addresses - 2 * int(per_side.sum())
    if short > 0:  # the remainder, one at a time, to random ways' left sides
        np.add.at(per_side, rng.integers(0, len(ways), (short + 1) // 2), 1)
    counts = np.repeat(per_side, 2)  # [way0 left, way0 right, way1 left, ...]
    total = int(counts.sum())
    owner = np.repeat(np.arange(2 * len(ways)), counts)
    way = owner // 2
    right = owner % 2
    start = np.repeat(np.cumsum(counts) - counts, counts)
    rank = np.arange(total) - start  # 0, 1, 2 ... along the side
    t = (rank + 0.5) / np.maximum(counts[owner], 1)
    dx, dy = (x1 - x0)[way] / kx, (y1 - y0)[way] / ky  # metres
    norm = np.maximum(np.hypot(dx, dy), 1e-9)
    side = np.where(right == 1, -1.0, 1.0) * 15.0  # left of the way's direction: +
    px = x0[way] / kx + t * dx - side * dy / norm
    py = y0[way] / ky + t * dy + side * dx / norm
    number = 2 * rank + 1 + right
    letter = np.where(rng.random(total) < 0.03, rng.integers(1, 4, total), 0).astype(np.int8)
    if total > addresses:  # the rounding above gave a few too many
        keep = np.sort(rng.choice(total, addresses, replace=False))
        px, py, way, number, letter = px[keep], py[keep], way[keep], number[keep], letter[keep]

    # POIs next to random addresses
    at = rng.integers(0, px.size, pois) if px.size else np.zeros(0, dtype=np.int64)
    kind = rng.integers(0, len(POI_KINDS), pois)
    brands = [f"{s}{e}" for s, e in zip(stems[:BRANDS], ("mart", "co", "ex", "o", "a", "ia") * BRANDS, strict=False)]
    poi_name = []
    for k in kind.tolist():
        style = POI_KINDS[k][2]
        if style == "chain":
            poi_name.append(brands[int(np.searchsorted(_BRAND_CDF, rng.random()))])
        else:
            poi_name.append(f"{stems[int(np.searchsorted(cdf, rng.random()))]} {style}")
    # towns: squares of 4 x 4 districts, inside the road network's bounds
    lat_lo, lat_hi, lng_lo, lng_hi = float(lat.min()), float(lat.max()), float(lng.min()), float(lng.max())
    span = 4 * k_primary * block_m
    boxes: list[tuple[float, float, float, float]] = []
    for k in range(towns_per_row**2):
        tr, tc = divmod(k, towns_per_row)
        south, west = (tr * span - block_m / 2) * ky + origin[0], (tc * span - block_m / 2) * kx + origin[1]
        north, east = south + span * ky, west + span * kx
        boxes.append((max(west, lng_lo), max(south, lat_lo), min(east, lng_hi), min(north, lat_hi)))
    return SearchLayer(
        town_boxes=boxes,
        street_names=names,
        town_names=town_names,
        districts_per_row=per_row,
        addr_lat=py * ky,
        addr_lng=px * kx,
        addr_street=way_name[way].astype(np.int32),
        addr_number=number.astype(np.int32),
        addr_letter=letter,
        addr_district=way_district[way].astype(np.int32),
        poi_lat=py[at] * ky + rng.uniform(-8, 8, pois) * ky,
        poi_lng=px[at] * kx + rng.uniform(-8, 8, pois) * kx,
        poi_kind=kind.astype(np.int16),
        poi_name=poi_name,
        poi_address=np.where(rng.random(pois) < 0.5, at, -1).astype(np.int64),
    )


_BRAND_CDF = _zipf_cdf(BRANDS, 1.1)


def synthetic_fences(count: int, bbox: list[float], seed: int) -> list[Any]:
    """``count`` fences of one account over ``bbox``: half circles, half polygons of 6-40
    vertices, 20-150 m across (shops, depots, car parks)."""
    from engine.geofence.model import parse_fence  # noqa: PLC0415

    rng = np.random.default_rng(seed)
    m_lat = 111_132.0
    fences = []
    for i in range(count):
        lng = float(rng.uniform(bbox[0], bbox[2]))
        lat = float(rng.uniform(bbox[1], bbox[3]))
        radius = float(rng.uniform(10.0, 75.0))
        if i % 2:
            body: dict[str, Any] = {"type": "circle", "center": {"lat": lat, "lng": lng}, "radius": radius}
        else:
            k = int(rng.integers(6, 41))
            ang = np.linspace(0, 2 * np.pi, k, endpoint=False) + rng.uniform(0, 0.8, k) * 2 * np.pi / k
            r = radius * rng.uniform(0.5, 1.0, k)
            m_lng = m_lat * math.cos(math.radians(lat))
            ring = np.c_[lng + r * np.cos(ang) / m_lng, lat + r * np.sin(ang) / m_lat].tolist()
            ring.append(ring[0])
            body = {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [ring]}, "properties": {}}
        fences.append(parse_fence(body, fence_id=f"f{i}"))
    return fences
