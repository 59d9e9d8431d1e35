"""Reading OSM tags: name variants, admin levels, house numbers."""

from __future__ import annotations

# Name keys searched besides ``name``; ``name:<lang>`` keys are taken for these languages only
# (a country relation has 200+ translations that nobody types in a city extract).
NAME_KEYS = ("name", "alt_name", "old_name", "short_name", "official_name", "loc_name", "int_name")
NAME_LANGS = ("en", "fr", "fi", "sv", "de", "it", "es", "nl", "pt", "ru", "et", "no", "da", "lij")


def names_of(tags, all_langs: bool = False) -> dict[str, str]:
    """{'name': 'Etelä-Suomi', 'name:sv': 'Södra Finland', 'alt_name': ...} from an osmium TagList
    or a dict. ``alt_name`` values separated by ';' are kept as one entry (split at search time)."""
    out: dict[str, str] = {}
    for key, value in tags.items() if hasattr(tags, "items") else ((t.k, t.v) for t in tags):
        if not value:
            continue
        base, _, lang = key.partition(":")
        if base in NAME_KEYS and (not lang or all_langs or lang in NAME_LANGS):
            out[key] = value
    return out


def name_variants(names: dict[str, str]) -> list[str]:
    """Every distinct searchable string of a names dict (alt_name 'a;b' -> 'a', 'b')."""
    seen: dict[str, None] = {}
    for value in names.values():
        for part in value.split(";"):
            part = part.strip()
            if part:
                seen.setdefault(part, None)
    return list(seen)


def admin_level(tags) -> int | None:
    raw = tags.get("admin_level")
    if raw is None:
        return None
    try:
        return int(float(raw.strip()))
    except ValueError:
        return None


def housenumbers(raw: str) -> list[str]:
    """'12;14' / '12,14' -> ['12', '14']; '12-14' stays one number (a range building)."""
    parts = [p.strip() for p in raw.replace(",", ";").split(";")]
    return [p for p in parts if p]
