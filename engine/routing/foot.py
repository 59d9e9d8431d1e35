"""The foot profile: which OSM ways a person may walk, in which direction, how fast.

Pure functions over a tag mapping, as the car profile (:mod:`engine.routing.profile`); the
choices follow OSRM's ``foot.lua`` (the benchmark reference) where it matters for agreement.

Walkable: ``footway`` (sidewalks ``footway=sidewalk`` and crossings ``footway=crossing``
included), ``path``, ``pedestrian``, ``steps``, ``track``, ``living_street``, ``residential``,
``service``, ``unclassified``, ``road``, ``tertiary``/``secondary``/``primary`` (and links);
``trunk``/``trunk_link`` only with a sidewalk (``sidewalk=both|left|right|yes``) or an explicit
``foot=yes|designated|permissive``; ``cycleway`` and ``bridleway`` only with such a ``foot`` tag
(OSRM's rule); ``route=ferry`` unless ``foot=no``. Never motorways (nor ``motorroad=yes``).

Access: the first of ``foot``, ``access`` that is set decides; :data:`ACCESS_DENIED` (``no``,
``private``, ...) excludes the way, so ``access=private`` + ``foot=yes`` is walkable.

Direction: ``oneway`` is ignored (a one-way street is walked both ways); only ``oneway:foot``
counts.

Speed: :data:`WALK_KMH` (5 km/h) everywhere, :data:`STEPS_KMH` on steps; ferries at their
``duration`` or 5 km/h.

Pedestrian areas (``highway=pedestrian|footway`` + ``area=yes``, closed ways): walked along their
outline, and crossed straight between the points where other walkable ways meet the outline when
the straight line stays inside the area (OSRM's ``foot_area.lua`` does the same with a visibility
graph); :func:`is_pedestrian_area` says which ways these are, the graph build adds the crossings.

Nodes: ``foot=no`` (or ``access=no|private`` without a ``foot`` tag allowing it) and solid
barriers (walls, fences) block; everything else a person walks through (bollards, gates, kerbs);
traffic signals cost :data:`SIGNALS_S`. Turns cost nothing. Turn restrictions apply only when
they say so: ``restriction:foot`` (a plain ``restriction`` is for vehicles, as in OSRM).
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.routing import profile as P
from engine.routing import way_tags as T

WALK_KMH = 5.0
STEPS_KMH = 2.5
FERRY_KMH = 5.0
SIGNALS_S = 2.0

ACCESS_HIERARCHY = ("foot", "access")
ACCESS_DENIED = frozenset({"no", "private", "agricultural", "forestry", "military", "delivery", "use_sidepath"})
ACCESS_EXPLICIT = frozenset({"yes", "designated", "permissive", "official"})
WALKABLE = frozenset(
    {
        "footway",
        "path",
        "pedestrian",
        "steps",
        "track",
        "living_street",
        "residential",
        "service",
        "unclassified",
        "road",
        "tertiary",
        "tertiary_link",
        "secondary",
        "secondary_link",
        "primary",
        "primary_link",
    }
)
# walkable only with a sidewalk or an explicit foot tag / only with an explicit foot tag
NEEDS_SIDEWALK = frozenset({"trunk", "trunk_link"})
NEEDS_FOOT_TAG = frozenset({"cycleway", "bridleway"})
# highway values walked like a footway
FOOTWAY_LIKE = {"platform": "footway", "corridor": "footway"}
SIDEWALK_YES = frozenset({"both", "left", "right", "yes"})
AREA_HIGHWAYS = frozenset({"pedestrian", "footway"})
RESTRICTION_KEYS = ("restriction:foot",)


def is_pedestrian_area(tags: Mapping[str, str]) -> bool:
    """A square or pedestrian area walked across (its way must be closed)."""
    return (
        tags.get("highway") in AREA_HIGHWAYS
        and tags.get("area") == "yes"
        and T.first_access(tags, ACCESS_HIERARCHY) not in ACCESS_DENIED
    )


def _allowed_class(highway: str, tags: Mapping[str, str], access: str | None) -> bool:
    if highway in WALKABLE:
        return True
    explicit = access in ACCESS_EXPLICIT and tags.get("foot") is not None
    if highway in NEEDS_SIDEWALK:
        sidewalk = tags.get("sidewalk") or tags.get("sidewalk:both") or ""
        return (
            explicit or sidewalk in SIDEWALK_YES or (tags.get("sidewalk:left") or tags.get("sidewalk:right")) == "yes"
        )
    if highway in NEEDS_FOOT_TAG:
        return explicit
    return False


def way_profile(tags: Mapping[str, str]) -> P.WayProfile | None:
    """The walker's view of a way, or None when it may not be walked at all."""
    is_ferry = tags.get("route") == "ferry"
    highway = "ferry" if is_ferry else FOOTWAY_LIKE.get(tags.get("highway") or "", tags.get("highway"))
    if not highway or tags.get("area") == "yes" or T.closed(tags):
        return None
    if highway in ("motorway", "motorway_link") or tags.get("motorroad") == "yes":
        return None
    access = T.first_access(tags, ACCESS_HIERARCHY)
    if access in ACCESS_DENIED or (not is_ferry and not _allowed_class(highway, tags, access)):
        return None
    fwd, bwd = T.oneway(tags.get("oneway:foot")) or (True, True)
    flags = T.basic_flags(tags, ferry=is_ferry, forward=fwd, backward=bwd)
    speed = STEPS_KMH if highway == "steps" else FERRY_KMH if is_ferry else WALK_KMH
    ferry_s = P.parse_duration_s(tags.get("duration")) if is_ferry else None
    return P.WayProfile(highway, fwd, bwd, speed, speed, 1.0, flags, T.name_of(tags), ferry_s)


def area_profile(tags: Mapping[str, str]) -> P.WayProfile:
    """How a pedestrian area's outline and crossings are walked."""
    return P.WayProfile("pedestrian", True, True, WALK_KMH, WALK_KMH, 1.0, 0, T.name_of(tags))


def node_penalty(tags: Mapping[str, str]) -> float | None:
    """Seconds added to pass through a node, or None when it stops a walker."""
    access = T.first_access(tags, ACCESS_HIERARCHY)
    if access in ACCESS_DENIED or (tags.get("barrier") in T.SOLID_BARRIERS and access not in ACCESS_EXPLICIT):
        return None
    if tags.get("highway") == "traffic_signals" or tags.get("crossing") == "traffic_signals":
        return SIGNALS_S
    return 0.0


def turn_duration_s(angle_deg: float, *, n_roads: int, uturn: bool, roundabout: bool) -> float:
    """A walker turns for free."""
    return 0.0


def restriction_kind(tags: Mapping[str, str]) -> str | None:
    """``"no"``/``"only"`` for a restriction that names walkers (``restriction:foot``)."""
    return T.restriction_kind(tags, RESTRICTION_KEYS, ("foot",))
