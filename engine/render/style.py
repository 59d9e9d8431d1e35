"""The map style: colours, draw order and line widths by zoom, in the spirit of OSM Carto.

Widths are CSS pixels (the renderer draws at 72 dpi x scale, so 1 pt == 1 CSS px); each width
is a list of (zoom, px) stops interpolated linearly in zoom and held flat beyond the ends.
"""

from __future__ import annotations

from dataclasses import dataclass

NEUTRAL = "#e4e2de"  # outside data coverage
LAND = "#f2efe9"
WATER = "#aad3df"
WATER_LINE = "#8cc4d6"
BUILDING = "#d9d0c9"
BUILDING_EDGE = "#c4b6ab"
LABEL = "#333333"
LABEL_HALO = "#ffffff"
ATTRIBUTION = "\u00a9 OpenStreetMap contributors"

# polygon fills, drawn in this order (later on top)
LANDUSE_FILL: dict[str, str] = {
    "residential": "#e8e4e0",
    "commercial": "#f2e1e0",
    "industrial": "#ece2ea",
    "construction": "#dcdcc8",
    "farm": "#eef0d5",
    "pedestrian": "#e4e4ec",
    "cemetery": "#c6dcc8",
    "park": "#cdebc0",
    "scrub": "#c8dfb0",
    "wood": "#add19e",
    "wetland": "#d4e8df",
    "beach": "#fff1ba",
    "pitch": "#aae0cb",
}
WATER_FILL: dict[str, str] = {"sea": WATER, "water": WATER, "pool": WATER}


def interp(stops: tuple[tuple[float, float], ...], zoom: float) -> float:
    if zoom <= stops[0][0]:
        return stops[0][1]
    for (z0, w0), (z1, w1) in zip(stops, stops[1:], strict=False):
        if zoom <= z1:
            return w0 + (w1 - w0) * (zoom - z0) / (z1 - z0)
    return stops[-1][1]


@dataclass(frozen=True)
class RoadStyle:
    fill: str
    casing: str | None
    width: tuple[tuple[float, float], ...]  # fill width stops
    casing_px: tuple[tuple[float, float], ...] = ((12, 0.5), (16, 1.0), (18, 1.5))
    dash: tuple[float, float] | None = None  # (on, off) in px for paths
    casing_from: int = 12  # below this zoom only the fill is drawn (thin lines)
    label_size: float = 0.0  # font size in px; 0 = never labelled


# major -> minor; drawn minor first so major roads sit on top
ROADS: dict[str, RoadStyle] = {
    "motorway": RoadStyle(
        "#e990a0",
        "#c24e6b",
        ((5, 0.8), (8, 1.5), (12, 2.6), (14, 4.5), (16, 9), (18, 20)),
        casing_from=10,
        label_size=10.5,
    ),
    "trunk": RoadStyle(
        "#f9b29c",
        "#c8583e",
        ((6, 0.8), (8, 1.4), (12, 2.4), (14, 4.2), (16, 8.5), (18, 19)),
        casing_from=10,
        label_size=10.5,
    ),
    "primary": RoadStyle(
        "#fcd6a4",
        "#b87f2c",
        ((8, 0.8), (10, 1.2), (12, 2.0), (14, 3.6), (16, 7.0), (18, 18)),
        casing_from=11,
        label_size=10.5,
    ),
    "secondary": RoadStyle(
        "#f7fabf",
        "#8d9430",
        ((9, 0.7), (11, 1.0), (12, 1.6), (14, 3.2), (16, 6.5), (18, 16)),
        casing_from=12,
        label_size=10,
    ),
    "tertiary": RoadStyle(
        "#ffffff", "#a3a3a3", ((11, 0.6), (12, 1.0), (14, 2.6), (16, 5.5), (18, 14)), casing_from=12, label_size=10
    ),
    "residential": RoadStyle(
        "#ffffff", "#b8b8b8", ((12, 0.5), (13, 0.8), (14, 1.8), (16, 4.8), (18, 12)), casing_from=13, label_size=9.5
    ),
    "pedestrian": RoadStyle(
        "#e6e6ee", "#aaaaaa", ((13, 0.6), (14, 1.6), (16, 4.5), (18, 11)), casing_from=14, label_size=9
    ),
    "service": RoadStyle("#ffffff", "#bdbdbd", ((14, 0.8), (16, 2.6), (18, 6.5)), casing_from=15, label_size=0),
    "track": RoadStyle("#a2783a", None, ((13, 0.6), (16, 1.3), (18, 2.0)), dash=(4.0, 2.0), label_size=0),
    "cycleway": RoadStyle("#3a6ff0", None, ((14, 0.6), (16, 1.0), (18, 1.6)), dash=(3.0, 2.0), label_size=0),
    "footway": RoadStyle("#f0806e", None, ((15, 0.6), (16, 0.8), (18, 1.5)), dash=(2.5, 1.8), label_size=0),
    "sidewalk": RoadStyle("#f4a396", None, ((17, 0.7), (18, 1.2)), dash=(2.0, 2.0), label_size=0),
    "steps": RoadStyle("#f0806e", None, ((15, 1.2), (16, 2.0), (18, 3.5)), dash=(1.0, 0.8), label_size=0),
}
ROAD_ORDER: tuple[str, ...] = (
    "sidewalk",
    "footway",
    "steps",
    "cycleway",
    "track",
    "service",
    "pedestrian",
    "residential",
    "tertiary",
    "secondary",
    "primary",
    "trunk",
    "motorway",
)
LABEL_MIN_ZOOM = 15
LABEL_MIN_ZOOM_MAJOR = 14  # primary and above

RAIL = {
    "rail": ("#707070", ((9, 0.6), (13, 1.2), (16, 2.4), (18, 3.0))),
    "tram": ("#6f6f6f", ((13, 0.6), (16, 1.1), (18, 1.6))),
    "subway": ("#8a8aa0", ((14, 0.6), (16, 1.2), (18, 1.8))),
}
WATERWAY = {
    "river": ((8, 0.8), (12, 2.0), (15, 5.0), (18, 12.0)),
    "canal": ((10, 0.8), (13, 2.0), (16, 5.0), (18, 10.0)),
    "stream": ((13, 0.6), (15, 1.2), (18, 3.0)),
    "drain": ((14, 0.5), (16, 1.0), (18, 2.0)),
}
ADMIN_COLOUR = "#9e5f9e"
ADMIN_WIDTH = {  # by admin_level bucket
    2: ((0, 0.8), (8, 1.6), (14, 2.6), (18, 3.5)),
    4: ((5, 0.6), (10, 1.2), (14, 1.8), (18, 2.5)),
    6: ((8, 0.5), (12, 1.0), (16, 1.5)),
    8: ((11, 0.5), (14, 0.9), (18, 1.3)),
}


def admin_bucket(level: int) -> int:
    return 2 if level <= 2 else 4 if level <= 4 else 6 if level <= 6 else 8


AREA_LABELS = {
    "park": "#2e6b34",
    "wood": "#2e6b34",
    "water": "#2d6a8e",
    "pitch": "#2e6b5a",
    "cemetery": "#2e6b34",
}  # class -> label colour
AREA_LABEL_MIN_ZOOM = 15
AREA_LABEL_SIZE = 9.0

PLACE_FONT = {"city": 13.0, "town": 12.0, "village": 11.0, "suburb": 11.0, "quarter": 10.0, "neighbourhood": 9.5}
PLACE_MAX_ZOOM = 16  # places are not labelled above this (street names take over)

# named colours of the Google Static Maps syntax
NAMED_COLOURS = {
    "black": "#000000",
    "brown": "#8b4513",
    "green": "#1e9e3c",
    "purple": "#7b3fbf",
    "yellow": "#f2c200",
    "blue": "#2a6fdb",
    "gray": "#808080",
    "grey": "#808080",
    "orange": "#f27a1a",
    "red": "#e0322b",
    "white": "#ffffff",
}
