"""The bicycle profile: which OSM ways a cyclist may ride (or push along), which way, how fast.

Pure functions over a tag mapping, as the car profile (:mod:`engine.routing.profile`); the
choices follow OSRM's ``bicycle.lua`` (the benchmark reference) where it matters for agreement.

Ridden (speeds in km/h, :data:`RIDE_KMH`): ``cycleway`` 15, ``primary``..``tertiary`` (and
links), ``residential``, ``unclassified``, ``road`` 15, ``track``, ``path`` 12, ``service``,
``living_street`` 10. ``trunk`` and ``bridleway`` only with ``bicycle=yes|designated|permissive``.
Pushed at :data:`WALK_KMH` (4 km/h): ``footway`` and ``pedestrian`` (ridden at the path speed when
``bicycle=yes|designated|permissive``), any way tagged ``bicycle=dismount``; ``steps`` at
:data:`STEPS_KMH`. Never motorways (nor ``motorroad=yes``). ``route=ferry`` unless ``bicycle=no``.

Access: the first of ``bicycle``, ``vehicle``, ``access`` that is set decides (``:forward`` /
``:backward`` variants too); :data:`ACCESS_DENIED` excludes.

Direction: the car's ``oneway`` (``yes``/``-1``, implied on roundabouts), then
``oneway:bicycle`` overrides it (``no``: both ways, contraflow), and so does a contraflow lane
(``cycleway=opposite|opposite_lane|opposite_track``, also on ``cycleway:left|right|both``).

Speed: the class's, capped by :data:`SURFACE_KMH` (slower on gravel, sett, cobbles); ``maxspeed``
is ignored (a cyclist is slower than any limit). Pushing ignores the surface.

Nodes: ``bicycle=no`` (or ``access=no|private`` without a ``bicycle`` tag allowing it), solid
barriers and stiles/turnstiles block; traffic signals cost :data:`SIGNALS_S`. Turns cost OSRM's
bicycle sigmoid up to :data:`TURN_PENALTY_S`, U-turns :data:`UTURN_S`. Turn restrictions:
``restriction`` and ``restriction:bicycle`` apply, unless ``except`` names ``bicycle``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from engine.routing import profile as P
from engine.routing import way_tags as T

WALK_KMH = 4.0
STEPS_KMH = 2.0
FERRY_KMH = 5.0
SIGNALS_S = 2.0
TURN_PENALTY_S = 6.0
TURN_BIAS = 1.4
UTURN_S = 20.0

RIDE_KMH: dict[str, float] = {
    "cycleway": 15,
    "primary": 15,
    "primary_link": 15,
    "secondary": 15,
    "secondary_link": 15,
    "tertiary": 15,
    "tertiary_link": 15,
    "residential": 15,
    "unclassified": 15,
    "road": 15,
    "track": 12,
    "path": 12,
    "service": 10,
    "living_street": 10,
    # only with an explicit bicycle tag
    "trunk": 15,
    "trunk_link": 15,
    "bridleway": 8,
    "footway": 12,
    "pedestrian": 12,
}
NEEDS_BICYCLE_TAG = frozenset({"trunk", "trunk_link", "bridleway"})
PUSHED = {"footway": WALK_KMH, "pedestrian": WALK_KMH, "steps": STEPS_KMH}  # unless ridden by tag
SURFACE_KMH: dict[str, float] = {
    "paving_stones": 12,
    "cement": 10,
    "compacted": 10,
    "fine_gravel": 10,
    "ground": 10,
    "metal": 10,
    "bricks": 10,
    "sett": 9,
    "dirt": 8,
    "grass_paver": 8,
    "wood": 6,
    "gravel": 6,
    "unpaved": 6,
    "pebblestone": 6,
    "cobblestone": 6,
    "clay": 6,
    "earth": 6,
    "stone": 6,
    "rocky": 6,
    "grass": 6,
    "tartan": 6,
    "sand": 3,
    "mud": 3,
}

ACCESS_HIERARCHY = ("bicycle", "vehicle", "access")
ACCESS_DENIED = frozenset({"no", "private", "agricultural", "forestry", "military", "delivery", "use_sidepath"})
ACCESS_RIDE = frozenset({"yes", "designated", "permissive", "official"})
CONTRAFLOW = frozenset({"opposite", "opposite_lane", "opposite_track", "opposite_share_busway"})
BLOCKING_BARRIERS = T.SOLID_BARRIERS | {"stile", "turnstile", "full-height_turnstile"}
RESTRICTION_KEYS = ("restriction:bicycle", "restriction")


def _direction(tags: Mapping[str, str]) -> tuple[bool, bool]:
    """(forward, backward) for a cyclist: the vehicle one-way, then its bicycle exceptions."""
    roundabout = tags.get("junction") in ("roundabout", "circular")
    fwd, bwd = T.oneway(tags.get("oneway")) or ((True, False) if roundabout else (True, True))
    if (tags.get("oneway") or "").lower() == "reversible":
        return False, False
    own = T.oneway(tags.get("oneway:bicycle"))
    if own is not None:
        return own
    lanes = (tags.get(k) for k in ("cycleway", "cycleway:left", "cycleway:right", "cycleway:both"))
    if any(v in CONTRAFLOW for v in lanes):
        return True, True
    return fwd, bwd


def _speed(highway: str, tags: Mapping[str, str], access: str | None) -> float | None:
    """Riding or pushing speed on the way, None when a bicycle may not use it."""
    if access == "dismount":
        return WALK_KMH
    ridden_by_tag = access in ACCESS_RIDE and tags.get("bicycle") is not None
    if highway in PUSHED and not (ridden_by_tag and highway != "steps"):
        return PUSHED[highway]
    if highway not in RIDE_KMH or (highway in NEEDS_BICYCLE_TAG and not ridden_by_tag):
        return None
    speed = RIDE_KMH[highway]
    return min(speed, SURFACE_KMH.get(tags.get("surface") or "", speed))


def way_profile(tags: Mapping[str, str]) -> P.WayProfile | None:
    """The cyclist's view of a way, or None when a bicycle may not use it at all."""
    is_ferry = tags.get("route") == "ferry"
    highway = "ferry" if is_ferry else tags.get("highway")
    if not highway or tags.get("area") == "yes" or T.closed(tags):
        return None
    if highway in ("motorway", "motorway_link") or tags.get("motorroad") == "yes":
        return None
    access = T.first_access(tags, ACCESS_HIERARCHY)
    if access in ACCESS_DENIED:
        return None
    speed = FERRY_KMH if is_ferry else _speed(highway, tags, access)
    if speed is None:
        return None
    fwd, bwd = _direction(tags)
    fwd = fwd and T.first_access(tags, ACCESS_HIERARCHY, "forward") not in ACCESS_DENIED
    bwd = bwd and T.first_access(tags, ACCESS_HIERARCHY, "backward") not in ACCESS_DENIED
    if not (fwd or bwd):
        return None
    flags = T.basic_flags(tags, ferry=is_ferry, forward=fwd, backward=bwd)
    ferry_s = P.parse_duration_s(tags.get("duration")) if is_ferry else None
    return P.WayProfile(highway, fwd, bwd, speed, speed, 1.0, flags, T.name_of(tags), ferry_s)


def node_penalty(tags: Mapping[str, str]) -> float | None:
    """Seconds added to pass through a node, or None when it stops a cyclist."""
    access = T.first_access(tags, ACCESS_HIERARCHY)
    if access in ACCESS_DENIED or (tags.get("barrier") in BLOCKING_BARRIERS and access not in ACCESS_RIDE):
        return None
    if tags.get("highway") == "traffic_signals":
        return SIGNALS_S
    return 0.0


def turn_duration_s(angle_deg: float, *, n_roads: int, uturn: bool, roundabout: bool) -> float:
    """OSRM's bicycle turn cost: ``angle_deg`` in (-180, 180], positive = right turn; charged only
    where there is a choice, or for a U-turn."""
    if n_roads <= 2 and not uturn:
        return 0.0
    bias = TURN_BIAS if angle_deg < 0 else 1 / TURN_BIAS  # right-hand traffic: left turns cost more
    cost = TURN_PENALTY_S / (1 + math.exp(-((13 * bias) * abs(angle_deg) / 180 - 6.5 / bias)))
    return cost + (UTURN_S if uturn else 0.0)


def restriction_kind(tags: Mapping[str, str]) -> str | None:
    """``"no"``/``"only"`` for a restriction that holds for bicycles, else None."""
    return T.restriction_kind(tags, RESTRICTION_KEYS, ("bicycle",))
