"""The words that place a feature: its city, district, postcode and country.

Nominatim calls them a place's address terms. The geocoder explains the query words a name
leaves over with them ('Kirkkokatu 1, Oulu': 'oulu' is Oulu's Kirkkokatu's context), and the
import indexes them beside the names (the ``context`` column of ``entry_context_fts``), so a query
can ask for the street words and the town words together. Both sides take them from here, so
what is indexed is what the matcher expects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from engine.search.normalize import tokens

COUNTRY_WORDS = {
    "MCO": frozenset({"monaco", "monako", "mc", "mco"}),
    "FRA": frozenset({"france", "frankreich", "ranska", "fr", "fra"}),
    "FIN": frozenset({"finland", "suomi", "finlande", "finnland", "fi", "fin"}),
}


def normalize_postcode(postcode: str) -> str:
    """A postcode as a query or a context word: no spaces, lowercase ('00100', 'sw1a1aa')."""
    return postcode.replace(" ", "").lower()


@lru_cache(maxsize=16384)
def context_words(city: str | None, district: str | None, postcode: str | None, country: str | None) -> frozenset[str]:
    """The normalised words of a feature's city, district, postcode and country."""
    words: set[str] = set()
    for value in (city, district):
        if value:
            words.update(tokens(value))
    if postcode:
        words.add(normalize_postcode(postcode))
    words |= COUNTRY_WORDS.get(country or "", frozenset())
    return frozenset(words)


def feature_context(feature: Mapping[str, Any]) -> frozenset[str]:
    """:func:`context_words` of a feature row (a dict with city, district, postcode, country)."""
    return context_words(feature.get("city"), feature.get("district"), feature.get("postcode"), feature.get("country"))


def context_text(words: Iterable[str]) -> str:
    """Context words as the text of an FTS5 column: each once, in a stable order."""
    return " ".join(sorted(set(words)))
