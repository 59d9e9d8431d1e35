"""Text normalisation shared by the index build and the queries.

lowercase -> Finnish/Swedish suffix abbreviations ('Aleksanterink.' -> 'aleksanterinkatu') ->
unidecode (diacritics: 'Etelä' -> 'etela') -> punctuation to spaces -> token abbreviations
('bd' -> 'boulevard', 'st' -> 'saint'). Both sides of a match go through the same function, so
'Sainte-Dévote', 'Ste Devote' and 'ste. devote' all become 'sainte devote'.
"""

from __future__ import annotations

import re
from functools import lru_cache

from unidecode import unidecode

# whole-token abbreviations (after lowercasing and unidecode, dots removed)
ABBREVIATIONS: dict[str, str] = {
    # French
    "bd": "boulevard",
    "bld": "boulevard",
    "blvd": "boulevard",
    "boul": "boulevard",
    "av": "avenue",
    "ave": "avenue",
    "avn": "avenue",
    "st": "saint",
    "ste": "sainte",
    "sts": "saints",
    "pl": "place",
    "pce": "place",
    "r": "rue",
    "ch": "chemin",
    "che": "chemin",
    "rte": "route",
    "imp": "impasse",
    "esp": "esplanade",
    "sq": "square",
    "fg": "faubourg",
    "pte": "porte",
    "qu": "quai",
    "crs": "cours",
    "mte": "montee",
    "dr": "docteur",
    "gal": "general",
    "gen": "general",
    "mal": "marechal",
    "pdt": "president",
    "prom": "promenade",
    # English
    "rd": "road",
    "ln": "lane",
    # Finnish / Swedish (whole tokens)
    "k": "katu",
    "t": "tie",
    "kj": "kuja",
    "g": "gatan",
    "v": "vagen",
}

# suffix abbreviations glued to a word, before the dot disappears: 'mannerheimint.' -> '...tie'
_SUFFIXES = (
    (re.compile(r"(\w{3,})k\.(?=\s|,|$)"), r"\1katu"),
    (re.compile(r"(\w{3,})t\.(?=\s|,|$)"), r"\1tie"),
    (re.compile(r"(\w{3,})kj\.(?=\s|,|$)"), r"\1kuja"),
    (re.compile(r"(\w{3,})g\.(?=\s|,|$)"), r"\1gatan"),
    (re.compile(r"(\w{3,})v\.(?=\s|,|$)"), r"\1vagen"),
)

STOPWORDS = frozenset(
    [
        "de",
        "la",
        "le",
        "les",
        "du",
        "des",
        "d",
        "l",
        "et",
        "a",
        "au",
        "aux",
        "en",
        "sur",
        "the",
        "of",
        "and",
        "von",
        "der",
        "den",
    ]
)

_NON_WORD = re.compile(r"[^a-z0-9_]+")
_RANGE = re.compile(r"(?<=\d)\s*-\s*(?=\d)")  # '4 - 6' -> one token '4-6'
_NUMBER = re.compile(r"^\d+(?:bis|ter|[a-z])?$|^\d+[a-z]?-\d+[a-z]?$")


@lru_cache(maxsize=65536)
def tokens(text: str) -> tuple[str, ...]:
    if not text:
        return ()
    low = text.lower()
    if "." in low:
        for pattern, repl in _SUFFIXES:
            low = pattern.sub(repl, low)
    low = unidecode(low).lower().replace("_", " ")
    if "-" in low:
        low = _RANGE.sub("_", low)
    out = []
    for tok in _NON_WORD.split(low):
        if not tok:
            continue
        if "_" in tok:
            rng = tok.replace("_", "-")
            if _NUMBER.match(rng):
                out.append(rng)
            else:
                out.extend(t for t in rng.split("-") if t)
            continue
        out.append(ABBREVIATIONS.get(tok, tok))
    return tuple(out)


def last_raw_token(text: str) -> str | None:
    """The last token of ``text`` without abbreviation expansion (a word being typed)."""
    toks = _NON_WORD.split(unidecode(text.lower()).replace("_", " "))
    toks = [t for t in toks if t]
    return toks[-1] if toks else None


def normalize(text: str | None) -> str:
    return " ".join(tokens(text)) if text else ""


def is_number(tok: str) -> bool:
    return bool(_NUMBER.match(tok))


def normalize_housenumber(raw: str | None) -> str:
    """'12 B' / '12b' / '12-B' -> '12b'; '12-14' kept as a range."""
    if not raw:
        return ""
    low = unidecode(raw).lower().strip()
    low = re.sub(r"(\d)\s*[- ]?\s*([a-z])$", r"\1\2", low)
    return re.sub(r"\s+", "", low)


def number_value(norm: str) -> int | None:
    m = re.match(r"^(\d+)", norm or "")
    return int(m.group(1)) if m else None
