"""Tag readings the profiles share: access by hierarchy, one-way values, what closes a way to
everyone, the flags of a way, which turn restrictions hold. Pure functions over a tag mapping,
like :mod:`engine.routing.profile`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# edge_flags bits, as engine.routing.profile.FLAG_* (kept equal by tests/engine/test_travel_profiles.py)
FLAG_FERRY = 2
FLAG_ROUNDABOUT = 8
FLAG_ONEWAY = 16
FLAG_TUNNEL = 64

YES = frozenset({"yes", "true", "1"})
REVERSE = frozenset({"-1", "reverse"})
NO = frozenset({"no", "false", "0"})
# barriers that stop a person on foot or pushing a bicycle too (drawn on a way's node, they cut it)
SOLID_BARRIERS = frozenset({"wall", "fence", "hedge", "retaining_wall", "city_wall", "ditch", "debris"})


def first_access(tags: Mapping[str, str], hierarchy: tuple[str, ...], direction: str | None = None) -> str | None:
    """The value of the first key of ``hierarchy`` that is set (``key:<direction>`` before ``key``)."""
    for key in hierarchy:
        value = (direction and tags.get(f"{key}:{direction}")) or tags.get(key)
        if value:
            return value.split(";")[0].strip().lower()
    return None


def oneway(value: str | None) -> tuple[bool, bool] | None:
    """(forward, backward) for a ``oneway``-style value, None when it says nothing."""
    text = (value or "").strip().lower()
    if text in YES:
        return True, False
    if text in REVERSE:
        return False, True
    if text in NO:
        return True, True
    return None


def closed(tags: Mapping[str, str]) -> bool:
    """Impassable or under construction: closed to every profile."""
    if tags.get("impassable") == "yes" or tags.get("status") == "impassable":
        return True
    return tags.get("construction") not in (None, "no", "minor", "widening")


def name_of(tags: Mapping[str, str]) -> str:
    return tags.get("name") or tags.get("ref") or ""


def basic_flags(tags: Mapping[str, str], *, ferry: bool, forward: bool, backward: bool) -> int:
    """The flags every profile sets alike: ferry, one-way, roundabout, tunnel."""
    flags = FLAG_FERRY if ferry else 0
    if forward != backward:
        flags |= FLAG_ONEWAY
    if tags.get("junction") in ("roundabout", "circular"):
        flags |= FLAG_ROUNDABOUT
    if tags.get("tunnel") not in (None, "no"):
        flags |= FLAG_TUNNEL
    return flags


def restriction_kind(tags: Mapping[str, str], keys: Iterable[str], exempt: Iterable[str]) -> str | None:
    """``"no"``/``"only"`` from the first of ``keys`` whose value says so, for a restriction
    relation whose ``except`` names none of ``exempt``; else None."""
    if tags.get("type") != "restriction":
        return None
    excepted = (tags.get("except") or "").split(";")
    if any(name in excepted for name in exempt):
        return None
    for key in keys:
        value = tags.get(key)
        if value:
            if value.startswith("no_"):
                return "no"
            if value.startswith("only_"):
                return "only"
    return None
