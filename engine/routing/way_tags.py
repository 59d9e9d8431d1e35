"""Tag readings the foot and bicycle profiles share: access by hierarchy, one-way values, what
closes a way to everyone. Pure functions over a tag mapping, like :mod:`engine.routing.profile`."""

from __future__ import annotations

from collections.abc import Mapping

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
