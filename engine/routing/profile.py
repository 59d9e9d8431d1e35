"""The car profile: which OSM ways a car may drive, in which direction, how fast, and what it avoids.

Pure functions over a tag mapping (``dict``-like, ``get(key)``), no I/O, so the import stage and
the tests share them. The choices follow OSRM's ``car.lua`` (the benchmark reference) where it
matters for route agreement.

Drivable classes and default speeds (km/h, used when a way has no usable ``maxspeed``):

    ============== ===== ============== =====
    motorway         90  motorway_link    45
    trunk            85  trunk_link       40
    primary          65  primary_link     30
    secondary        55  secondary_link   25
    tertiary         40  tertiary_link    20
    unclassified     25  residential      25
    living_street    10  service          15
    road (unknown)   20  ferry (route)     5
    track            10
    ============== ===== ============== =====

``highway=track`` (OSRM's car.lua drops it; Valhalla's ``auto`` drives it) is a *connector*
(:data:`CONNECTOR_CLASSES`): kept in the graph, weighted like a local-access-only road (entering
one from an ordinary road costs :data:`RESTRICTED_ENTRY_S`), and never a snapping target while an
ordinary road is within reach (:class:`engine.routing.snap.EdgeSnapper`). So a route takes a
track only where nothing else joins two parts of the network, such as hill roads whose paved
continuation lies outside the extract: without the tracks, a route from there has no answer.
Tracks a car may not use say so (``motor_vehicle=agricultural|forestry|no``, :data:`ACCESS_DENIED`).

These defaults are already "urban" travel speeds (OSRM's table). A way *with* ``maxspeed`` drives
at ``URBAN_FACTOR`` (0.8) times the posted limit: a posted 50 km/h street is not driven at
50 km/h on average (junctions, traffic). ``maxspeed`` forms understood: ``50``, ``50 km/h``,
``30 mph``, ``10 knots``, ``none`` (130), ``walk`` (6), zone codes ``FI:urban`` / ``DE:rural`` /
``RU:living_street`` / ``FR:zone30`` (table :data:`ZONE_SPEEDS`, then the generic
``urban``/``rural``/``trunk``/``motorway`` row), ``a;b`` (first value), and the directional
``maxspeed:forward`` / ``maxspeed:backward``. ``maxspeed:advisory`` wins over ``maxspeed``.

Direction: ``oneway`` = ``yes|true|1`` (forward), ``-1|reverse`` (backward), ``no|false|0``
(both); implied one-way on ``highway=motorway`` and ``junction=roundabout|circular``;
``oneway=reversible`` is not drivable (OSRM does the same).

Access: the first of ``motorcar``, ``motor_vehicle``, ``vehicle``, ``access`` that is set decides
(``:forward``/``:backward`` variants too); ``no``, ``private`` and the other values of
:data:`ACCESS_DENIED` exclude the way (direction). ``destination``/``delivery`` stay drivable.
``highway=service`` with ``service=emergency_access``, ``area=yes``, ``impassable``/``construction``
are excluded. ``route=ferry`` ways are drivable at their ``duration`` or 5 km/h.

Avoid flags: ``toll=yes`` (also ``toll:motorcar``), ferries, ``highway=motorway[_link]`` (and
``motorroad=yes``); see :data:`FLAG_TOLL` etc.

Turn penalties (seconds, added per turn in the edge-based graph, OSRM's formula): a sigmoid of
the turn angle up to 7.5 s (left turns cost more on right-hand traffic), +2 s for turns across
oncoming traffic, +20 s for a U-turn (only allowed at dead ends), +2 s through traffic signals,
+60 s through a gate. Blocking barriers (bollard, block, ...) cut the road at that node. A
barrier whose own access tags let cars through (``motorcar=yes``, ``access=permissive``, ...: any
value outside :data:`ACCESS_DENIED`) neither blocks nor costs anything, gates included (OSRM's
car.lua reads a barrier only when the node has no access tag).
Service roads of kind parking_aisle/driveway/alley/parking/drive-through keep their speed but
weigh twice as much (routing prefers through roads, as OSRM's ``service_penalties``); narrow
two-way roads (``width`` <= 3 m or ``lanes=1``: x2, width < 4/5/6 m: x1.67/1.33/1.25,
``lane_markings=no``: x1.33) weigh more too. ``surface`` caps the speed (:data:`SURFACE_MAX_KMH`:
sett 40, cobblestone 30, paving_stones 60, ...).

Known difference from OSRM: a turn is priced from the bearings of the two segments that meet at
the junction, so a U-turn made *through a loop of one-way ways* counts only as its separate
slight turns. OSRM treats one-way pieces of one street that meet at a sharp angle as one divided
road and prices the move from one carriageway to the other as a U-turn, even where the junction
itself is nearly straight; on Monaco this explains the routes OSRM rates clearly slower than
ours (the places and numbers: ``docs/engineering-history.md``). Reproducing the charge would mean
reproducing OSRM's road-merging heuristics, which we do not; a realistic price for such loops
(speed limited by curvature) would differ from OSRM elsewhere.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from engine.routing import way_tags

# highway class codes (edge_class in the graph); 0 is "ferry"
HIGHWAY_CLASSES: tuple[str, ...] = (
    "ferry",
    "motorway",
    "motorway_link",
    "trunk",
    "trunk_link",
    "primary",
    "primary_link",
    "secondary",
    "secondary_link",
    "tertiary",
    "tertiary_link",
    "unclassified",
    "residential",
    "living_street",
    "service",
    "road",
    "track",
    # classes only the foot and bicycle profiles use (engine.routing.foot, engine.routing.bicycle)
    "footway",
    "path",
    "steps",
    "pedestrian",
    "cycleway",
    "bridleway",
)
CLASS_CODE: dict[str, int] = {name: i for i, name in enumerate(HIGHWAY_CLASSES)}

DEFAULT_SPEED_KMH: dict[str, float] = {
    "motorway": 90,
    "motorway_link": 45,
    "trunk": 85,
    "trunk_link": 40,
    "primary": 65,
    "primary_link": 30,
    "secondary": 55,
    "secondary_link": 25,
    "tertiary": 40,
    "tertiary_link": 20,
    "unclassified": 25,
    "residential": 25,
    "living_street": 10,
    "service": 15,
    "road": 20,
    "ferry": 5,
    "track": 10,
}
# classes a route uses only to connect roads that nothing else joins: entering one from an ordinary
# road costs RESTRICTED_ENTRY_S of weight (as a local-access-only road), and snapping avoids them
CONNECTOR_CLASSES = frozenset({"track"})
URBAN_FACTOR = 0.8  # driven speed / posted maxspeed

# generic zone rows, then per-country exceptions (km/h)
ZONE_DEFAULTS = {"urban": 50, "rural": 90, "trunk": 110, "motorway": 130, "living_street": 10}
ZONE_SPEEDS = {
    "at:rural": 100,
    "at:trunk": 100,
    "be:motorway": 120,
    "ch:rural": 80,
    "ch:trunk": 100,
    "ch:motorway": 120,
    "de:living_street": 7,
    "de:rural": 100,
    "de:motorway": 130,
    "dk:rural": 80,
    "fi:rural": 80,
    "fi:motorway": 120,
    "fi:living_street": 20,
    "fr:rural": 80,
    "fr:zone30": 30,
    "it:rural": 90,
    "nl:rural": 80,
    "no:rural": 80,
    "no:motorway": 110,
    "pl:rural": 100,
    "ru:urban": 60,
    "ru:living_street": 20,
    "ru:motorway": 110,
    "se:rural": 70,
    "gb:nsl_single": 96.5,
    "gb:nsl_dual": 112.6,
    "gb:motorway": 112.6,
    "uk:nsl_single": 96.5,
    "uk:nsl_dual": 112.6,
    "uk:motorway": 112.6,
}

ACCESS_HIERARCHY = ("motorcar", "motor_vehicle", "vehicle", "access")
ACCESS_DENIED = frozenset(
    {
        "no",
        "private",
        "agricultural",
        "forestry",
        "emergency",
        "psv",
        "taxi",
        "bus",
        "minibus",
        "share_taxi",
        "foot",
        "emergency_vehicle",
        "restricted",
        "military",
        "official",
        "permit",
        "residents",
        "hgv",
        "bicycle",
        "disabled",
    }
)
# local access only: drivable, but a route may not pass *into* such a road from an ordinary one
# except to start or end there (OSRM's "restricted" class): entering costs RESTRICTED_ENTRY_S
ACCESS_RESTRICTED = frozenset({"destination", "delivery", "customers"})
RESTRICTED_ENTRY_S = 3600.0
SERVICE_PENALISED = frozenset({"parking_aisle", "driveway", "alley", "parking", "drive-through", "drive-thru"})
SERVICE_FORBIDDEN = frozenset({"emergency_access"})

# edge_flags bits
FLAG_TOLL = 1
FLAG_FERRY = 2
FLAG_MOTORWAY = 4
FLAG_ROUNDABOUT = 8
FLAG_ONEWAY = 16  # the way is one-way (no twin edge in the other direction)
FLAG_LINK = 32  # *_link ramps
FLAG_TUNNEL = 64
FLAG_RESTRICTED = 128  # local access only (access/motor_vehicle=destination|delivery|customers)
AVOID_FLAGS = {"tolls": FLAG_TOLL, "ferries": FLAG_FERRY, "motorways": FLAG_MOTORWAY}

# node penalties (seconds) and blocking barriers
TRAFFIC_SIGNAL_S = 2.0
GATE_S = 60.0
UTURN_S = 20.0
TURN_PENALTY_S = 7.5
TURN_BIAS = 1.075
ONCOMING_S = 2.0
BARRIER_PASSABLE = frozenset(
    {"cattle_grid", "border_control", "toll_booth", "sally_port", "no", "entrance", "height_restrictor", "arch", "kerb"}
)
BARRIER_PENALTY = {"gate": GATE_S, "lift_gate": GATE_S}

_TRUE = frozenset({"yes", "true", "1"})
_REVERSE = frozenset({"-1", "reverse"})
_FALSE = frozenset({"no", "false", "0"})


@dataclass(frozen=True)
class WayProfile:
    """What the car profile makes of one way."""

    highway: str  # a key of DEFAULT_SPEED_KMH ("ferry" for route=ferry)
    forward: bool  # drivable in the way's node order
    backward: bool  # drivable against it
    speed_fwd_kmh: float
    speed_bwd_kmh: float
    weight_factor: float  # routing weight = duration * weight_factor (>= 1)
    flags: int  # FLAG_* bits shared by both directions (FLAG_ONEWAY set when one-way)
    name: str
    ferry_duration_s: float | None = None  # route=ferry with a duration tag: the whole way


_NUM = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-z/]*)\s*$")


def parse_maxspeed(value: str | None) -> float | None:
    """Posted speed in km/h from a ``maxspeed`` value, or None when it says nothing usable."""
    if not value:
        return None
    raw = value.split(";")[0].strip().lower()
    if not raw:
        return None
    m = _NUM.match(raw)
    if m:
        speed = float(m.group(1))
        unit = m.group(2)
        if unit in ("mph",):
            speed *= 1.609344
        elif unit in ("knots", "kn"):
            speed *= 1.852
        elif unit not in ("", "km/h", "kmh", "kph"):
            return None
        return speed if speed > 0 else None
    if raw == "none":
        return 130.0
    if raw == "walk":
        return 6.0
    if raw in ZONE_SPEEDS:
        return float(ZONE_SPEEDS[raw])
    if ":" in raw:
        zone = raw.split(":", 1)[1]
        if zone in ZONE_DEFAULTS:
            return float(ZONE_DEFAULTS[zone])
        m = re.match(r"^zone:?(\d+)$", zone)
        if m:
            return float(m.group(1))
    return None


def parse_duration_s(value: str | None) -> float | None:
    """OSM ``duration`` (``HH:MM``, ``HH:MM:SS``, ``MM`` minutes) in seconds."""
    if not value:
        return None
    parts = value.strip().split(":")
    try:
        nums = [float(p) for p in parts]
    except ValueError:
        return None
    if len(nums) == 1:
        return nums[0] * 60.0
    if len(nums) == 2:
        return nums[0] * 3600.0 + nums[1] * 60.0
    if len(nums) == 3:
        return nums[0] * 3600.0 + nums[1] * 60.0 + nums[2]
    return None


SURFACE_MAX_KMH = {
    "cement": 80,
    "compacted": 80,
    "fine_gravel": 80,
    "paving_stones": 60,
    "metal": 60,
    "bricks": 60,
    "grass": 40,
    "wood": 40,
    "sett": 40,
    "grass_paver": 40,
    "gravel": 40,
    "unpaved": 40,
    "ground": 40,
    "dirt": 40,
    "pebblestone": 40,
    "tartan": 40,
    "cobblestone": 30,
    "clay": 30,
    "earth": 20,
    "stone": 20,
    "rocky": 20,
    "sand": 20,
    "mud": 10,
}


def _number(value: str | None) -> float | None:
    if not value:
        return None
    m = re.match(r"^\s*([0-9]+(?:\.[0-9]+)?)", value)
    return float(m.group(1)) if m else None


def _access(tags: Mapping[str, str], direction: str) -> str | None:
    for key in ACCESS_HIERARCHY:
        value = tags.get(f"{key}:{direction}") or tags.get(key)
        if value:
            return value.split(";")[0].strip().lower()
    return None


def way_profile(tags: Mapping[str, str]) -> WayProfile | None:
    """The car's view of a way, or None when a car may not drive it at all."""
    highway = tags.get("highway")
    is_ferry = tags.get("route") == "ferry"
    if is_ferry:
        highway = "ferry"
    if not highway or highway not in DEFAULT_SPEED_KMH:
        return None
    if tags.get("area") == "yes" or tags.get("impassable") == "yes":
        return None
    if tags.get("status") == "impassable" or tags.get("construction") not in (None, "no", "minor", "widening"):
        return None
    if highway == "service" and tags.get("service") in SERVICE_FORBIDDEN:
        return None
    oneway_tag = (tags.get("oneway") or "").strip().lower()
    junction = tags.get("junction")
    roundabout = junction in ("roundabout", "circular")
    if oneway_tag == "reversible":
        return None
    if oneway_tag in _TRUE:
        fwd, bwd = True, False
    elif oneway_tag in _REVERSE:
        fwd, bwd = False, True
    elif oneway_tag in _FALSE:
        fwd, bwd = True, True
    elif highway == "motorway" or roundabout:
        fwd, bwd = True, False
    else:
        fwd, bwd = True, True
    # access per direction
    if fwd and (_access(tags, "forward") in ACCESS_DENIED):
        fwd = False
    if bwd and (_access(tags, "backward") in ACCESS_DENIED):
        bwd = False
    if not (fwd or bwd):
        return None

    flags = 0
    if (tags.get("toll") or tags.get("toll:motorcar") or "no").lower() in _TRUE:
        flags |= FLAG_TOLL
    if is_ferry:
        flags |= FLAG_FERRY
    if highway in ("motorway", "motorway_link") or tags.get("motorroad") == "yes":
        flags |= FLAG_MOTORWAY
    if roundabout:
        flags |= FLAG_ROUNDABOUT
    if fwd != bwd:
        flags |= FLAG_ONEWAY
    if highway.endswith("_link"):
        flags |= FLAG_LINK
    if tags.get("tunnel") not in (None, "no"):
        flags |= FLAG_TUNNEL
    if _access(tags, "forward") in ACCESS_RESTRICTED or _access(tags, "backward") in ACCESS_RESTRICTED:
        flags |= FLAG_RESTRICTED
    if highway in CONNECTOR_CLASSES:
        flags |= FLAG_RESTRICTED

    default = float(DEFAULT_SPEED_KMH[highway])
    advisory = parse_maxspeed(tags.get("maxspeed:advisory"))
    common = advisory or parse_maxspeed(tags.get("maxspeed"))
    mf = parse_maxspeed(tags.get("maxspeed:forward")) or common
    mb = parse_maxspeed(tags.get("maxspeed:backward")) or common
    speed_f = mf * URBAN_FACTOR if mf else default
    speed_b = mb * URBAN_FACTOR if mb else default
    surface_cap = SURFACE_MAX_KMH.get(tags.get("surface") or "")
    if surface_cap:
        speed_f = min(speed_f, surface_cap)
        speed_b = min(speed_b, surface_cap)
    weight_factor = 1.0
    if highway == "service" and tags.get("service") in SERVICE_PENALISED:
        weight_factor = 2.0
    if fwd and bwd:  # narrow two-way roads are avoided (OSRM's width/lanes penalties)
        width = _number(tags.get("width"))
        lanes = _number(tags.get("lanes"))
        factor = 1.0
        if tags.get("lane_markings") == "no":
            factor = 1 / 0.75
        if width is not None:
            if width <= 3:
                factor = 2.0
            elif width < 4:
                factor = 1 / 0.6
            elif width < 5:
                factor = 1 / 0.75
            elif width < 6:
                factor = 1 / 0.8
        if lanes is not None and lanes <= 1:
            factor = 2.0
        weight_factor *= factor
    ferry_s = parse_duration_s(tags.get("duration")) if is_ferry else None
    name = tags.get("name") or tags.get("ref") or ""
    return WayProfile(highway, fwd, bwd, speed_f, speed_b, weight_factor, flags, name, ferry_s)


def node_penalty(tags: Mapping[str, str]) -> float | None:
    """Seconds added to pass through a node, or None when the node blocks a car."""
    barrier = tags.get("barrier")
    access = None
    for key in ACCESS_HIERARCHY:
        value = tags.get(key)
        if value:
            access = value.lower()
            break
    if barrier:
        if access is not None and access not in ACCESS_DENIED:
            return 0.0  # the barrier's own tags let cars through: it stands open for them
        if barrier in BARRIER_PENALTY:
            return BARRIER_PENALTY[barrier]
        if barrier in BARRIER_PASSABLE or tags.get("bollard") == "rising":
            return 0.0
        return None
    if access in ("no",):
        return None
    if tags.get("highway") == "traffic_signals":
        return TRAFFIC_SIGNAL_S
    return 0.0


def turn_duration_s(angle_deg: float, *, n_roads: int, uturn: bool, roundabout: bool) -> float:
    """OSRM's turn cost: ``angle_deg`` in (-180, 180], 0 straight on, positive = right turn.

    Only charged where there is a choice (more than two roads meet) or for a U-turn.
    """
    if n_roads <= 2 and not uturn:
        return 0.0
    # right-hand traffic: a left turn (negative angle) costs more than a right turn
    if angle_deg >= 0:  # right turn
        cost = TURN_PENALTY_S / (1 + math.exp(-((13 / TURN_BIAS) * angle_deg / 180 - 6.5 * TURN_BIAS)))
    else:
        cost = TURN_PENALTY_S / (1 + math.exp(-((13 * TURN_BIAS) * -angle_deg / 180 - 6.5 / TURN_BIAS)))
    if angle_deg < 0 and not uturn and n_roads > 2 and not roundabout:
        sharp = 1 / (1 + math.exp(-(13 * abs(angle_deg) / 180 - 3.25)))
        cost += ONCOMING_S * sharp
    if uturn:
        cost += UTURN_S
    return cost


RESTRICTION_KEYS = ("restriction", "restriction:motorcar", "restriction:motor_vehicle")


def restriction_kind(tags: Mapping[str, str]) -> str | None:
    """``"no"`` or ``"only"`` for a car turn-restriction relation, else None."""
    return way_tags.restriction_kind(tags, RESTRICTION_KEYS, ("motorcar", "motor_vehicle"))
