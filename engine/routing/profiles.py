"""The travel profiles a dataset can route for: ``car``, ``foot``, ``bicycle``.

A :class:`Profile` bundles the pure tag functions of one mode (:mod:`engine.routing.profile` for
the car, :mod:`engine.routing.foot`, :mod:`engine.routing.bicycle`): the graph build
(:mod:`engine.routing.build`) reads the OSM file once and applies each requested profile to every
way, node and restriction. Each profile gets its own routing graph and contraction hierarchy
(``graph/`` for the car, ``graph-<profile>/``, :func:`engine.layout.profile_graph_dir`): the
edges, their directions, costs and turns differ, and so does every array the CH query reads.

Names on the API: the profile names, and Mapbox's ``driving``, ``walking``, ``cycling``
(:data:`ALIASES`); :func:`canonical` turns either into a profile name or raises
:class:`~engine.errors.InvalidParameter` naming ``profile``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from engine import layout
from engine.errors import InvalidParameter
from engine.routing import bicycle, foot
from engine.routing import profile as car

Tags = Mapping[str, str]


@dataclass(frozen=True)
class Profile:
    name: str
    adjective: str  # "drivable", "walkable", "rideable": in error messages
    way_noun: str  # "road" for the car, "way" for the others: "no drivable road", "no walkable way"
    way_profile: Callable[[Tags], car.WayProfile | None]
    node_penalty: Callable[[Tags], float | None]
    restriction_kind: Callable[[Tags], str | None]
    turn_duration_s: Callable[..., float]
    pedestrian_areas: bool = False  # walk across squares (foot.is_pedestrian_area)
    # routing weight of a turn from a way ridden onto one travelled at pushing_kmh or slower (a
    # cyclist getting off to push: OSRM bicycle.lua's mode_change_penalty); 0: no such penalty
    mode_change_s: float = 0.0
    pushing_kmh: float = 0.0
    # may turn back at any junction (a walker, a cyclist), at the cost of going on; else only at a
    # dead end. Then the approaches of a junction that turn alike share a CH hub
    # (engine.routing.hubs), and such junctions contract like a node-based graph.
    turns_back: bool = False
    # turn_duration_s is 0 for every turn (the import then does not ask it turn by turn)
    turns_free: bool = False

    @property
    def ways(self) -> str:
        return f"{self.adjective} {self.way_noun}"

    @property
    def graph_dir(self) -> str:
        return layout.profile_graph_dir(self.name)


CAR = Profile("car", "drivable", "road", car.way_profile, car.node_penalty, car.restriction_kind, car.turn_duration_s)
FOOT = Profile(
    "foot",
    "walkable",
    "way",
    foot.way_profile,
    foot.node_penalty,
    foot.restriction_kind,
    foot.turn_duration_s,
    pedestrian_areas=True,
    turns_back=True,
    turns_free=True,
)
BICYCLE = Profile(
    "bicycle",
    "rideable",
    "way",
    bicycle.way_profile,
    bicycle.node_penalty,
    bicycle.restriction_kind,
    bicycle.turn_duration_s,
    mode_change_s=bicycle.MODE_CHANGE_S,
    pushing_kmh=bicycle.WALK_KMH,
    turns_back=True,
    turns_free=True,
)
PROFILES: dict[str, Profile] = {p.name: p for p in (CAR, FOOT, BICYCLE)}
NAMES: tuple[str, ...] = tuple(PROFILES)
ALIASES: dict[str, str] = {"driving": "car", "walking": "foot", "cycling": "bicycle"}
ACCEPTED: tuple[str, ...] = NAMES + tuple(ALIASES)
DEFAULT = "car"


def canonical(name: str, parameter: str = "profile") -> str:
    """The profile called ``name`` (a profile name or an alias), else InvalidParameter."""
    key = (name or "").strip().lower()
    found = ALIASES.get(key, key)
    if found not in PROFILES:
        raise InvalidParameter(f"{parameter} must be one of {', '.join(ACCEPTED)}; got {name!r}", parameter=parameter)
    return found


def parse_list(names: Iterable[str], parameter: str = "profiles") -> tuple[str, ...]:
    """Profile names (aliases accepted) in the canonical order, without repeats; at least one."""
    chosen = {canonical(n, parameter) for n in names if n.strip()}
    if not chosen:
        raise InvalidParameter(f"{parameter}: name at least one of {', '.join(NAMES)}", parameter=parameter)
    return tuple(n for n in NAMES if n in chosen)
