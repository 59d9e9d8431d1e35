"""The bicycle profile: which OSM ways a cyclist may ride (or push along), which way, how fast.

Pure functions over a tag mapping, as the car profile (:mod:`engine.routing.profile`); the
choices follow OSRM's ``bicycle.lua`` (the benchmark reference) where it matters for agreement.

Ridden (speeds in km/h, :data:`RIDE_KMH`): ``cycleway``, ``primary``..``tertiary`` (and links),
``residential``, ``unclassified``, ``road``, ``living_street``, ``service`` 15, ``path`` 13,
``track`` 12. Any other highway (``footway``, ``pedestrian``, ``trunk``, ``bridleway``, ...) is
ridden at :data:`DEFAULT_KMH` when the access tags allow it (``bicycle``/``vehicle``/``access`` =
``yes|designated|permissive``), as OSRM rides an unknown way with a valid access tag. Never
motorways (nor ``motorroad=yes``), nor ways under construction. ``route=ferry`` unless
``bicycle=no``. A road whose cycle track is mapped as its own way (``cycleway[:side]=separate``)
is left to that way unless ``bicycle=yes|designated|permissive|destination``.

Pushed at :data:`WALK_KMH` (4 km/h) when it may not be ridden in a direction, unless ``foot=no``:
``footway``, ``pedestrian``, ``platform`` (``steps`` at :data:`STEPS_KMH`) both ways; and against
the one-way of a road otherwise ridden (OSRM's ``bike_push_handler``: a cyclist walks the bicycle
the wrong way along a one-way street), except where the one-way is implied (roundabouts). Any way
tagged ``bicycle=dismount`` is pushed both ways.

Access: the first of ``bicycle``, ``vehicle``, ``access`` that is set decides (``:forward`` /
``:backward`` variants too); :data:`ACCESS_DENIED` excludes the way (no pushing either).

Direction: the car's ``oneway`` (``yes``/``-1``, implied on roundabouts), then
``oneway:bicycle`` overrides it (``no``: both ways, contraflow), and so does a contraflow lane
(``cycleway=opposite|opposite_lane|opposite_track``, also on ``cycleway:left|right|both``).

Speed: the class's (or the pushing speed), capped by ``maxspeed`` (``maxspeed:forward`` /
``:backward``) when lower and by :data:`SURFACE_KMH` (slower on gravel, sett, cobbles).

Nodes: ``bicycle=no`` (or ``access=no|private`` without a ``bicycle`` tag allowing it), solid
barriers and stiles/turnstiles block; traffic signals cost :data:`SIGNALS_S`. Turns cost nothing
by their angle, and a cyclist may turn back at any junction (``Profile.turns_back``): the
approaches of a junction then turn alike and share one CH hub (:mod:`engine.routing.hubs`). OSRM's
bicycle.lua prices a turn by its angle (``(angle / 90)² * 6 s``, x1.4 to the left); that made every
junction a clique of distinct turns in the edge-based contraction, 45x the time of the same
junctions as hubs on a grid city, for two routes in 300 per sample whose distance moves past
OSRM's 10 % (``docs/engineering-history.md``). Turning from a ridden way onto a pushed one
weighs :data:`MODE_CHANGE_S` more (not in the time): ridden and pushed approaches make two hubs.
Turn restrictions: ``restriction`` and ``restriction:bicycle`` apply, unless ``except`` names
``bicycle``.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.routing import profile as P
from engine.routing import way_tags as T

WALK_KMH = 4.0
STEPS_KMH = 2.0
FERRY_KMH = 5.0
SIGNALS_S = 2.0
MODE_CHANGE_S = 30.0  # routing weight (not time) of getting off to push (profiles.Profile.mode_change_s)

DEFAULT_KMH = 15.0
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
    "living_street": 15,
    "service": 15,
    "path": 13,
    "track": 12,
}
PUSHED = {"footway": WALK_KMH, "pedestrian": WALK_KMH, "platform": WALK_KMH, "steps": STEPS_KMH}
# classes of the graph (profile.HIGHWAY_CLASSES) for the other highway values a bicycle may use
CLASS_OF = {"platform": "footway", "corridor": "footway", "elevator": "footway"}
NEVER = frozenset({"motorway", "motorway_link", "construction", "proposed"})
SURFACE_KMH: dict[str, float] = {
    "wood": 10,
    "metal": 10,
    "cobblestone:flattened": 10,
    "paving_stones": 10,
    "compacted": 10,
    "fine_gravel": 10,
    "ground": 10,
    "sett": 9,
    "dirt": 8,
    "cobblestone": 7,
    "unpaved": 6,
    "gravel": 6,
    "pebblestone": 6,
    "grass_paver": 6,
    "earth": 6,
    "grass": 6,
    "laterite": 5,
    "mud": 3,
    "sand": 3,
    "woodchips": 3,
}

ACCESS_HIERARCHY = ("bicycle", "vehicle", "access")
ACCESS_DENIED = frozenset({"no", "private", "agricultural", "forestry", "military", "delivery", "use_sidepath"})
ACCESS_RIDE = frozenset({"yes", "designated", "permissive", "official"})
SEPARATE_OVERRIDE = ACCESS_RIDE | {"destination"}
CONTRAFLOW = frozenset({"opposite", "opposite_lane", "opposite_track", "opposite_share_busway"})
BLOCKING_BARRIERS = T.SOLID_BARRIERS | {"stile", "turnstile", "full-height_turnstile"}
RESTRICTION_KEYS = ("restriction:bicycle", "restriction")


def _direction(tags: Mapping[str, str]) -> tuple[bool, bool]:
    """(forward, backward) a cyclist may ride: the vehicle one-way, then its bicycle exceptions."""
    roundabout = tags.get("junction") in ("roundabout", "circular")
    fwd, bwd = T.oneway(tags.get("oneway")) or ((True, False) if roundabout else (True, True))
    own = T.oneway(tags.get("oneway:bicycle"))
    if own is not None:
        return own
    lanes = (tags.get(k) for k in ("cycleway", "cycleway:left", "cycleway:right", "cycleway:both"))
    if any(v in CONTRAFLOW for v in lanes):
        return True, True
    return fwd, bwd


def _separate_cycleway(tags: Mapping[str, str]) -> bool:
    """The road's cycle track is its own way: ride that one, unless the road says bicycles may."""
    sides = (tags.get(k) for k in ("cycleway", "cycleway:both", "cycleway:left", "cycleway:right"))
    return any(v == "separate" for v in sides) and tags.get("bicycle") not in SEPARATE_OVERRIDE


def _ride_kmh(highway: str, access: str | None) -> float | None:
    """Riding speed on the way's class, None when it is not ridden (maybe pushed)."""
    if access == "dismount":
        return None
    if highway in RIDE_KMH:
        return RIDE_KMH[highway]
    return DEFAULT_KMH if access in ACCESS_RIDE else None


def _push_kmh(highway: str, tags: Mapping[str, str], ridden: bool) -> float | None:
    """Pushing speed where the bicycle may not be ridden, None where it may not be pushed either."""
    if tags.get("foot") == "no":
        return None
    if highway in PUSHED:
        return PUSHED[highway]
    return WALK_KMH if ridden or tags.get("foot") == "yes" else None


def _capped(speed: float, tags: Mapping[str, str], direction: str) -> float:
    limit = P.parse_maxspeed(tags.get(f"maxspeed:{direction}")) or P.parse_maxspeed(tags.get("maxspeed"))
    surface = SURFACE_KMH.get(tags.get("surface") or "")
    return min(speed, limit or speed, surface or speed)


def _speeds(highway: str, tags: Mapping[str, str], access: str | None) -> tuple[float | None, float | None]:
    """Riding or pushing speed forward and backward (None: not that way), before the caps."""
    if access == "dismount":
        return WALK_KMH, WALK_KMH
    ride = _ride_kmh(highway, access)
    ride_fwd, ride_bwd = _direction(tags) if ride is not None else (False, False)
    push = _push_kmh(highway, tags, ride is not None)
    roundabout = tags.get("junction") in ("roundabout", "circular")
    fwd = ride if ride_fwd else push
    bwd = ride if ride_bwd else (None if roundabout and ride is not None else push)
    return fwd, bwd


def way_profile(tags: Mapping[str, str]) -> P.WayProfile | None:
    """The cyclist's view of a way, or None when a bicycle may not use it at all."""
    is_ferry = tags.get("route") == "ferry"
    highway = "ferry" if is_ferry else tags.get("highway")
    if (
        not highway
        or (highway not in P.CLASS_CODE and highway not in CLASS_OF)
        or highway in NEVER
        or tags.get("motorroad") == "yes"
        or T.closed(tags)
    ):
        return None
    if (tags.get("oneway") or "").lower() == "reversible":
        return None
    access = T.first_access(tags, ACCESS_HIERARCHY)
    if access in ACCESS_DENIED or (not is_ferry and _separate_cycleway(tags)):
        return None
    fwd_kmh: float | None = FERRY_KMH
    bwd_kmh: float | None = FERRY_KMH
    if not is_ferry:
        fwd_kmh, bwd_kmh = _speeds(highway, tags, access)
        fwd_kmh = fwd_kmh and _capped(fwd_kmh, tags, "forward")
        bwd_kmh = bwd_kmh and _capped(bwd_kmh, tags, "backward")
    fwd = fwd_kmh is not None and T.first_access(tags, ACCESS_HIERARCHY, "forward") not in ACCESS_DENIED
    bwd = bwd_kmh is not None and T.first_access(tags, ACCESS_HIERARCHY, "backward") not in ACCESS_DENIED
    if not (fwd or bwd):
        return None
    flags = T.basic_flags(tags, ferry=is_ferry, forward=fwd, backward=bwd)
    ferry_s = P.parse_duration_s(tags.get("duration")) if is_ferry else None
    speed_fwd, speed_bwd = fwd_kmh or bwd_kmh or WALK_KMH, bwd_kmh or fwd_kmh or WALK_KMH
    return P.WayProfile(
        CLASS_OF.get(highway, highway), fwd, bwd, speed_fwd, speed_bwd, 1.0, flags, T.name_of(tags), ferry_s
    )


def node_penalty(tags: Mapping[str, str]) -> float | None:
    """Seconds added to pass through a node, or None when it stops a cyclist."""
    access = T.first_access(tags, ACCESS_HIERARCHY)
    if access in ACCESS_DENIED or (tags.get("barrier") in BLOCKING_BARRIERS and access not in ACCESS_RIDE):
        return None
    if tags.get("highway") == "traffic_signals":
        return SIGNALS_S
    return 0.0


def turn_duration_s(angle_deg: float, *, n_roads: int, uturn: bool, roundabout: bool) -> float:
    """A cyclist turns for free."""
    return 0.0


def restriction_kind(tags: Mapping[str, str]) -> str | None:
    """``"no"``/``"only"`` for a restriction that holds for bicycles, else None."""
    return T.restriction_kind(tags, RESTRICTION_KEYS, ("bicycle",))
