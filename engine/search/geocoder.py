"""Matching a query against one region's SearchIndex: candidates with a score in [0, 1].

A query is normalised into tokens; numbers are house numbers (or postcodes, 5 digits); every
other token is expanded to vocabulary words (exact, typo within edit distance 1-2, prefix for
the last token while typing). FTS5 finds the names whose words or context words (city, district,
postcode: engine.search.context) hold every query word, so a street name shared by hundreds of
towns is found in the town the query names, and the names holding any of the rarer words (a
dataset imported before the context index existed has only these); each name is then aligned
with the query: how much of the name the query covers (weighted, so 'rue' and
'de' matter less than 'grimaldi'), and whether the query tokens left over are explained by the
feature's context (city, district, postcode, country). A street with a house number becomes
the address (exact), or an interpolated point between the known numbers around it.

Ranking: exact address > interpolated address > street > place/POI, each scaled by the text
match; ``near`` adds a small distance bias.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from shapely.geometry import LineString, Point
from shapely.ops import linemerge

from engine.geo import haversine_m, round_coord
from engine.search.context import feature_context, normalize_postcode
from engine.search.index import SearchIndex, prefix_score
from engine.search.normalize import (
    ABBREVIATIONS,
    STOPWORDS,
    is_number,
    last_raw_token,
    normalize_housenumber,
    number_value,
    tokens,
)

GENERIC = frozenset(
    [  # street-type words: they count half in a name
        "rue",
        "avenue",
        "boulevard",
        "quai",
        "place",
        "chemin",
        "route",
        "impasse",
        "allee",
        "square",
        "esplanade",
        "promenade",
        "passage",
        "montee",
        "descente",
        "escaliers",
        "escalier",
        "traverse",
        "cours",
        "voie",
        "sentier",
        "rond",
        "point",
        "katu",
        "tie",
        "kuja",
        "polku",
        "tori",
        "puistikko",
        "ranta",
        "silta",
        "aukio",
        "kaari",
        "gatan",
        "vagen",
        "street",
        "road",
        "lane",
        "way",
    ]
)
TYPE_BASE_WITH_NUMBER = {"address": 1.0, "interpolated": 0.9, "street": 0.75, "place": 0.68, "poi": 0.7}
TYPE_BASE = {"street": 0.96, "place": 0.97, "poi": 0.95, "address": 0.96}
UNEXPLAINED = 0.6  # factor per query word nothing explains
COMMON_WORD = 40  # names holding a word this often: left out of the any-word FTS query when possible
CONTEXT_ROWS = 100  # entries the name-and-context query reads at most
CONTEXT_MIN_PREFIX = 3  # letters of the word being typed before the name-and-context query asks for it


def _any_of(terms: list[str]) -> str:
    return "(" + " OR ".join(terms) + ")"


def _union(rows: list[tuple[int, int, str]], more: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """``rows`` then the entries of ``more`` not among them, in order."""
    seen = {r[0] for r in rows}
    return rows + [r for r in more if r[0] not in seen]


@dataclass
class Query:
    words: list[str]  # free words: name or context
    number: str | None = None  # normalised house number
    postcode: str | None = None
    city_words: list[str] = field(default_factory=list)  # structured city: context only
    prefix: bool = False  # the last word is being typed
    extra_numbers: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.words


def parses(text: str | None, **kw) -> list[Query]:
    """The parse, plus one per other number taken as the house number ('Avenue du 3 Septembre
    126': 126 is the number, 3 belongs to the name)."""
    first = parse(text, **kw)
    out = [first]
    if first.number and first.extra_numbers and not kw.get("number"):
        for alt in first.extra_numbers:
            q = parse(text, **kw)
            q.words = [*q.words, *([q.number] if q.number else []), *[n for n in q.extra_numbers if n != alt]]
            q.number = normalize_housenumber(alt)
            q.extra_numbers = []
            out.append(q)
        first.words = [*first.words, *first.extra_numbers]
        first.extra_numbers = []
    return out


def parse(
    text: str | None,
    *,
    street: str | None = None,
    number: str | None = None,
    city: str | None = None,
    postcode: str | None = None,
    prefix: bool = False,
) -> Query:
    toks = list(tokens(text or "")) + list(tokens(street or ""))
    if prefix and toks and text and not text[-1:].isspace():
        # the word being typed is a prefix, not an abbreviation ('Parking Pl' -> 'pl...')
        raw = last_raw_token(text)
        if raw and raw != toks[-1] and ABBREVIATIONS.get(raw) == toks[-1]:
            toks[-1] = raw
    words: list[str] = []
    numbers: list[str] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if is_number(t):
            nxt = toks[i + 1] if i + 1 < len(toks) else None
            if nxt and len(nxt) == 1 and nxt.isalpha() and not t[-1].isalpha():
                t += nxt  # '5 b' -> '5b'
                i += 1
            numbers.append(t)
        else:
            words.append(t)
        i += 1
    q = Query(words=words, prefix=prefix)
    if postcode:
        q.postcode = normalize_postcode(postcode.strip())
    for n in numbers:
        if len(n) >= 5 and n.isdigit() and q.postcode is None:
            q.postcode = n
        elif q.number is None and len(n) <= 6:
            q.number = normalize_housenumber(n)
        else:
            q.extra_numbers.append(n)
    if number:
        q.number = normalize_housenumber(number)
    if city:
        q.city_words = [t for t in tokens(city) if t not in STOPWORDS]
    return q


def _best_word_score(
    name_toks: list[str], expansions: dict[str, float], joined: dict[str, float] | None, word: str, typing: bool
) -> float:
    """How well one query word matches a name at best: its expansions' scores of the name's
    words, its pair's with the next word (``joined``), and, for the word being typed, the
    prefix score of the name words it begins."""
    best = 0.0
    for n in name_toks:
        s = expansions.get(n, 0.0)
        if joined is not None:
            s = max(s, joined.get(n, 0.0))
        if typing and n.startswith(word):
            s = max(s, prefix_score(word, n))
        if s > best:
            best = s
    return best


def _weight(tok: str) -> float:
    if tok in STOPWORDS:
        return 0.15
    if tok in GENERIC:
        return 0.5
    return 1.0


@dataclass(frozen=True)
class Placement:
    """How a feature's context (engine.search.context) explains the query words its name
    leaves over."""

    factor: float  # UNEXPLAINED per word nothing explains, 0.75 for another postcode, 0.9 per extra number
    hits: int  # words (and the postcode) the context explains

    @property
    def score(self) -> float:
        return self.factor * min(1.06, 1.0 + 0.02 * self.hits)


def placement(f: dict, *, q: Query, exps: list[dict[str, float]], used: set[int]) -> Placement:
    """The feature's :class:`Placement` for the query words not ``used`` by its name."""
    ctx = feature_context(f)
    factor = 1.0
    hits = 0
    for i, w in enumerate(q.words):
        if i in used or w in STOPWORDS:
            continue
        typing = q.prefix and i == len(q.words) - 1
        if (
            w in ctx
            or any(x in ctx for x in exps[i] if exps[i][x] >= 0.85)
            or (typing and any(c.startswith(w) for c in ctx))
        ):
            hits += 1
        else:
            factor *= UNEXPLAINED
    for w in q.city_words:
        if w in ctx:
            hits += 1
        else:
            factor *= UNEXPLAINED
    if q.postcode:
        pc = normalize_postcode(f.get("postcode") or "")
        if pc == q.postcode:
            hits += 1
        elif pc:
            factor *= 0.75
    factor *= 0.9 ** len(q.extra_numbers)
    return Placement(factor, hits)


class Matcher:
    def __init__(self, index: SearchIndex, region: str) -> None:
        self.index = index
        self.region = region

    # -- candidate names -----------------------------------------------------------------------
    def _expansions(self, q: Query) -> list[dict[str, float]]:
        out = []
        for i, w in enumerate(q.words):
            last = i == len(q.words) - 1
            out.append(self.index.expand(w, prefix=q.prefix and last))
        return out

    def _joined(self, q: Query) -> dict[int, dict[str, float]]:
        """Adjacent words written apart that a name writes as one: 'etela esplanadi'."""
        out: dict[int, dict[str, float]] = {}
        for i in range(len(q.words) - 1):
            a, b = q.words[i], q.words[i + 1]
            if a in STOPWORDS or b in STOPWORDS:
                continue
            last = i + 1 == len(q.words) - 1
            found = self.index.expand(a + b, prefix=q.prefix and last, fuzzy=False)
            if found:
                out[i] = {w: s * 0.97 for w, s in found.items()}
        return out

    def _word_terms(self, q: Query, i: int, exps, joined) -> list[str]:
        """The FTS5 terms query word ``i`` may stand for: its vocabulary words, the word it makes
        with the next one, and while typing the last word as a prefix."""
        alts = set(exps[i])
        if joined and i in joined:
            alts |= set(joined[i])
        terms = [f'"{a}"' for a in sorted(alts)]
        word = q.words[i]
        if q.prefix and i == len(q.words) - 1 and word.isalnum():
            # the words it begins, when the vocabulary vouches that they are among the terms
            # already, match the same names without FTS5's merge of the prefix's postings
            listed = self.index.words_beginning(word)
            if listed is None or not listed <= alts:
                terms.append(f'"{word}"*')
        return terms

    def _and_query(self, q: Query, exps, joined) -> str | None:
        """Every word in the name (stopwords no name holds are let go); None for a word no name holds."""
        groups = []
        for i, w in enumerate(q.words):
            terms = self._word_terms(q, i, exps, joined)
            if not terms:
                if w in STOPWORDS:
                    continue
                return None  # an unknown word: no name holds every word
            groups.append(_any_of(terms))
        return " AND ".join(groups)

    def _context_query(self, q: Query, exps, joined) -> str | None:
        """Every word (but stopwords) in the name or in the feature's context, at least one in
        the name, the structured city and the postcode in the context: 'Kirkkokatu 1, Oulu' is
        Oulu's Kirkkokatu among the hundreds of Finland, found before any row limit. None when
        there is nothing to place a name with (one word), or a word neither can hold."""
        groups: list[str] = []
        name_terms: list[str] = []
        for i, w in enumerate(q.words):
            typing = q.prefix and i == len(q.words) - 1
            if w in STOPWORDS or (typing and len(w) < CONTEXT_MIN_PREFIX):
                continue
            terms = self._word_terms(q, i, exps, joined)
            if not terms:
                return None
            groups.append(_any_of(terms))
            # the name is asked for whole words: a prefix there would read every name it begins
            name_terms.extend(t for t in terms if not t.endswith("*"))
        for w in q.city_words:
            terms = [f'"{a}"' for a in sorted(self.index.expand(w))]
            if not terms:
                return None
            groups.append(f"{{context}} : {_any_of(terms)}")
        if q.postcode:
            groups.append(f'{{context}} : "{q.postcode}"')
        if not name_terms or len(groups) < 2:
            return None
        return " AND ".join([f"{{norm}} : {_any_of(name_terms)}", *groups])

    def _candidate_rows(self, q: Query, exps, joined, alts: set[str], rare: bool) -> list[tuple[int, int, str]]:
        """Entries (id, feature id, norm) that may be what the query names. While typing, the names
        holding every word; unless they are plenty (then the words are a name being typed), the
        names whose words and context hold every word (a street of a common name in the town the
        query names), then, unless those fill their limit and no word is rare, the names holding
        any of the rarer words (typos, words of neither). ``rare``: whether ``alts`` are the rare
        words of the query (else every word is common and ``alts`` holds them all)."""
        rows: list[tuple[int, int, str]] = []
        if q.prefix:
            and_query = self._and_query(q, exps, joined)
            if and_query:
                rows = self.index.search_entries(and_query, limit=250)
        if len(rows) >= 10:
            return rows
        context_query = self._context_query(q, exps, joined) if self.index.has_context else None
        if context_query:
            in_context = self.index.search_entries_in_context(context_query, limit=CONTEXT_ROWS)
            rows = _union(rows, in_context)
            # names holding every word fill the limit, and the any-word query would only add
            # names holding some of the same common words (none is rare): thousands to rank
            # across a country ('thantdeest' OR 'walk') for names that align worse
            if len(in_context) >= CONTEXT_ROWS and not rare:
                return rows
        if alts:
            match = " OR ".join(f'"{w}"' for w in sorted(alts))
            rows = _union(rows, self.index.search_entries(match, limit=150 if len(alts) > 3 else 100))
        return rows

    def _align(self, norm: str, q: Query, exps: list[dict[str, float]], joined=None):
        """-> (coverage of the name, set of query word indexes used)."""
        name_toks = norm.split()
        last_prefix = len(q.words) - 1 if q.prefix else -1
        used: set[int] = set()
        total = matched = 0.0
        strong = False
        for n in name_toks:
            w = _weight(n)
            total += w
            best, best_i, pair = 0.0, -1, False
            for i, e in enumerate(exps):
                if i in used:
                    continue
                s = e.get(n, 0.0)
                if not s and i == last_prefix and n.startswith(q.words[i]):
                    s = prefix_score(q.words[i], n)
                if s > best:
                    best, best_i, pair = s, i, False
                if joined and i in joined and i + 1 not in used:
                    s = joined[i].get(n, 0.0)
                    if s > best:
                        best, best_i, pair = s, i, True
            if best_i >= 0:
                used.add(best_i)
                if pair:
                    used.add(best_i + 1)
                matched += w * best
                if w >= 1.0 or len(name_toks) == 1:
                    strong = True
        if not used or total == 0:
            return 0.0, used
        cov = matched / total
        if q.prefix:
            # while typing, the words not typed yet are no fault: how well are the typed words
            # matched (the name's coverage only breaks ties)
            qtotal = qmatched = 0.0
            for i, word in enumerate(q.words):
                wt = _weight(word)
                qtotal += wt
                if i in used:
                    qmatched += wt * _best_word_score(name_toks, exps[i], (joined or {}).get(i), word, i == last_prefix)
            if qtotal:
                cov = (qmatched / qtotal) * (0.85 + 0.15 * cov)
                if norm.startswith(" ".join(q.words)):
                    cov *= 1.08  # the name begins with what is typed
            return cov, used
        if not strong and any(_weight(n) >= 1.0 for n in name_toks) and any(_weight(w) >= 1.0 for w in q.words):
            cov *= 0.5
        return cov, used

    def match(
        self,
        q: Query,
        *,
        country: str | None = None,
        bbox=None,
        near=None,
        limit: int = 5,
        types: set[str] | None = None,
        lang: str | None = None,
        near_weight: float = 0.08,
    ) -> list[dict]:
        """Candidates, best first. ``near`` (lat, lng) lowers a score by up to ``near_weight``
        (relative) with the distance, saturating at 20 km."""
        if q.empty:
            return []
        exps = self._expansions(q)
        joined = self._joined(q)
        alts: set[str] = set()
        for e in [*exps, *joined.values()]:
            alts.update(e)
        if not alts and not q.prefix:
            return []
        # very common words ('rue', 'katu') only slow FTS down when rarer words are there;
        # they still count in the alignment below
        vocab = self.index.vocab
        rare = {w for w in alts if (vocab.get(w) or 0) <= COMMON_WORD}
        if rare:
            alts = rare
        rows = self._candidate_rows(q, exps, joined, alts, rare=bool(rare))
        if not rows:
            return []
        best_entry: dict[int, tuple[float, set[int], str]] = {}
        # a common name is the name of hundreds of streets and shops across a country: aligned once
        aligned: dict[str, tuple[float, set[int]]] = {}
        for _eid, fid, norm in rows:
            found = aligned.get(norm)
            if found is None:
                found = aligned[norm] = self._align(norm, q, exps, joined)
            cov, used = found
            if cov <= 0.2:
                continue
            prev = best_entry.get(fid)
            if prev is None or cov > prev[0]:
                best_entry[fid] = (cov, used, norm)
        if not best_entry:
            return []
        # only names that can still win are looked up (the rest cannot catch up on context);
        # exact ties are kept by feature id, so that the answer does not follow the row order
        top_cov = max(v[0] for v in best_entry.values())
        keep = sorted(best_entry.items(), key=lambda kv: (-kv[1][0], kv[0]))[: max(60, 3 * limit)]
        best_entry = {fid: v for fid, v in keep if v[0] >= 0.45 * top_cov}
        feats = self.index.features(best_entry)
        admitted = [
            (f, cov, used)
            for fid, (cov, used, _norm) in best_entry.items()
            if (f := feats.get(fid)) is not None and _admits(f, country, types)
        ]
        numbers = StreetNumbers(self.index, [f["id"] for f, _c, _u in admitted if f["type"] == "street"], q.number)
        results: list[dict] = []
        for f, cov, used in admitted:
            # a query read as the name beats the same words read as context ('Bretelle de
            # Monaco': the street of that name before the street 'Bretelle' in Monaco)
            wsum = sum(_weight(w) for w in q.words) or 1.0
            in_name = sum(_weight(w) for i, w in enumerate(q.words) if i in used) / wsum
            name_score = cov * (0.94 + 0.06 * in_name)
            results.extend(self._resolve(f, q, name_score, partial(placement, q=q, exps=exps, used=used), numbers))
        out = []
        for r in results:
            lat, lng = r["lat"], r["lng"]
            if bbox and not (bbox[0] <= lng <= bbox[2] and bbox[1] <= lat <= bbox[3]):
                continue
            if near:
                d = haversine_m(near[0], near[1], lat, lng)
                r["score"] *= 1.0 - near_weight * min(1.0, d / 20_000.0)
                r["_near_d"] = d
            out.append(r)
        out.sort(
            key=lambda r: (
                -round(r["score"], 3),
                r.get("_near_d", 0.0),
                -(r["feature"].get("importance") or 0.0),
                len(r["feature"].get("name") or ""),
                r["feature"]["id"],
            )
        )
        return self._dedupe(out, limit, lang)

    # -- house numbers -------------------------------------------------------------------------
    def _resolve(
        self, f: dict, q: Query, name_score: float, place: Callable[[dict], Placement], numbers: StreetNumbers
    ) -> list[dict]:
        """The candidates a feature gives: itself, or for a street and a house number its
        addresses of that number (each placed by its own context: a street crossing a town line
        has its numbers in either town), an interpolated point, or the street."""
        text_score = name_score * place(f).score
        imp = 0.02 * (f.get("importance") or 0.0)
        t = f["type"]
        if q.number is None:
            return [self._cand(f, t, (TYPE_BASE.get(t, 0.9) + imp) * text_score)]
        if t == "poi" and f.get("hn_norm") == q.number:
            return [self._cand(f, t, (1.0 + imp) * text_score)]
        if t != "street":
            return [self._cand(f, t, (TYPE_BASE_WITH_NUMBER[t] + imp) * text_score)]
        exact = numbers.exact(f["id"])
        if exact:
            return [self._cand(a, "address", (1.0 + imp) * name_score * place(a).score, street=f) for a in exact]
        point = interpolate(self.index, f, numbers.all(f["id"]), q.number)
        if point is not None:
            lat, lng = point
            cand = self._cand(f, "address", (TYPE_BASE_WITH_NUMBER["interpolated"] + imp) * text_score, street=f)
            cand.update(lat=lat, lng=lng, interpolated=True, number=q.number)
            return [cand]
        return [self._cand(f, "street", (TYPE_BASE_WITH_NUMBER["street"] + imp) * text_score)]

    def _cand(self, f: dict, t: str, score: float, street: dict | None = None) -> dict:
        return {
            "feature": f,
            "type": t,
            "score": score,
            "lat": f["lat"],
            "lng": f["lng"],
            "interpolated": False,
            "number": f.get("housenumber"),
            "street": street,
        }

    def _dedupe(self, cands: list[dict], limit: int, lang: str | None) -> list[dict]:
        out: list[dict] = []
        seen: set = set()
        for c in cands:
            f = c["feature"]
            key = (
                c["type"],
                f.get("street_key") or f.get("name"),
                c["number"] if c["type"] == "address" else None,
                round(c["lat"], 3),
                round(c["lng"], 3),
            )
            ident = (f["osm_type"], f["osm_id"], c["type"], c["number"])
            if key in seen or (f["osm_id"] and ident in seen):
                continue
            seen.add(key)
            seen.add(ident)
            out.append(self.render(c, lang))
            if len(out) >= limit:
                break
        return out

    def render(self, c: dict, lang: str | None = None) -> dict:
        f = c["feature"]
        t = c["type"]
        street_f = c.get("street")
        name = f.get("name")
        if lang and f.get("names"):
            names = json.loads(f["names"]) if isinstance(f["names"], str) else f["names"]
            name = names.get(f"name:{lang}", name)
        if t == "address":
            street = f.get("street") or (street_f or {}).get("name")
            name = f.get("name") if not c["interpolated"] else None
        elif t == "street":
            street = name
        else:
            street = f.get("street")
        number = c["number"] if t in ("address", "poi") else None
        cid = f"{self.region}:{f['id']}" + (f":{c['number']}" if c["interpolated"] else "")
        postcode = f.get("postcode") or ((street_f or {}).get("postcode") if c["interpolated"] else None)
        return {
            "id": cid,
            "type": t,
            "score": round(max(0.0, min(1.0, c["score"])), 4),
            "interpolated": bool(c["interpolated"]),
            "name": name,
            "address": {
                "country": f.get("country"),
                "city": f.get("city"),
                "district": f.get("district"),
                "street": street,
                "number": number,
                "postcode": postcode,
            },
            "coord": {"lat": round_coord(c["lat"]), "lng": round_coord(c["lng"])},
            "osm": {"type": f.get("osm_type"), "id": f.get("osm_id")} if f.get("osm_id") else None,
            "region": self.region,
            **({"category": f.get("category")} if t == "poi" else {}),
        }


def _admits(f: dict, country: str | None, types: set[str] | None) -> bool:
    """Whether a feature is of the country and of the types asked for (a street stands for its
    addresses)."""
    if country and f["country"] != country:
        return False
    return not types or f["type"] in types or (f["type"] == "street" and "address" in types)


class StreetNumbers:
    """The addresses of a query's candidate streets, each read once for all of them: those of
    the house number asked for (a street of a country holds dozens of numbers, and a common name
    is the name of dozens of a query's streets), then, for the streets without it, all of theirs
    (to interpolate the number)."""

    def __init__(self, index: SearchIndex, street_ids: list[int], number: str | None) -> None:
        self.index = index
        self.numbered = index.addresses_on_streets(street_ids, number) if number is not None else {}
        self._every: dict[int, list[dict]] | None = None

    def exact(self, street_id: int) -> list[dict]:
        return self.numbered.get(street_id, [])

    def all(self, street_id: int) -> list[dict]:
        if self._every is None:
            self._every = self.index.addresses_on_streets([s for s, found in self.numbered.items() if not found])
        return self._every.get(street_id, [])


def interpolate(index: SearchIndex, street: dict, addrs: list[dict], number: str):
    """(lat, lng) of a missing house number between the known ones on the street, or None."""
    target = number_value(number)
    if target is None:
        return None
    geom = index.street_geometry(street["id"])
    if geom is None:
        return None
    valued = [(number_value(a["hn_norm"]), a) for a in addrs]
    known = [(v, a) for v, a in valued if v is not None]
    if len(known) < 2:
        return None
    proj = index.proj
    lines = [LineString(proj.coords_to_xy(part.coords)) for part in getattr(geom, "geoms", [geom])]
    merged = linemerge(lines)
    parts = list(getattr(merged, "geoms", [merged]))
    same = [(v, a) for v, a in known if v % 2 == target % 2] or known
    lower = max((k for k in same if k[0] < target), default=None, key=lambda k: k[0])
    upper = min((k for k in same if k[0] > target), default=None, key=lambda k: k[0])
    if lower is None or upper is None:
        return None
    pts = []
    for _v, a in (lower, upper):
        px, py = proj.to_xy(a["lat"], a["lng"])
        pts.append(Point(float(px), float(py)))
    line = min(parts, key=lambda ln: ln.distance(pts[0]) + ln.distance(pts[1]))
    if line.distance(pts[0]) > 150 or line.distance(pts[1]) > 150:
        return None
    p0, p1 = line.project(pts[0]), line.project(pts[1])
    frac = (target - lower[0]) / (upper[0] - lower[0])
    if abs(p1 - p0) < 1e-6:
        x = pts[0].x + frac * (pts[1].x - pts[0].x)
        y = pts[0].y + frac * (pts[1].y - pts[0].y)
    else:
        at = line.interpolate(p0 + frac * (p1 - p0))
        # keep the side of the street the houses are on: offset like the known neighbours
        a0, a1 = line.interpolate(p0), line.interpolate(p1)
        ox = (pts[0].x - a0.x) * (1 - frac) + (pts[1].x - a1.x) * frac
        oy = (pts[0].y - a0.y) * (1 - frac) + (pts[1].y - a1.y) * frac
        x, y = at.x + ox, at.y + oy
    lat, lng = proj.to_latlng(x, y)
    if not (math.isfinite(float(lat)) and math.isfinite(float(lng))):
        return None
    return float(lat), float(lng)
