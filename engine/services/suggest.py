"""Suggest / autocomplete: what the user is typing -> streets, addresses, places, POIs.

The last word is a prefix; typos are tolerated from 4 letters on. Ranked by match quality,
importance and distance to ``near``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.countries import normalize_country
from engine.dataset import DatasetRegistry
from engine.search.geocoder import parse
from engine.services.geocoding import matcher_for


@dataclass(frozen=True)
class SuggestParams:
    q: str
    limit: int = 10
    near: tuple[float, float] | None = None  # (lat, lng)
    country: str | None = None


def label(c: dict[str, Any]) -> str:
    a = c["address"]
    t = c["type"]
    locality = a.get("city") or a.get("district")
    if t == "address":
        head = " ".join(x for x in (a.get("street"), a.get("number")) if x)
    elif t == "street":
        head = a.get("street") or c.get("name") or ""
    else:
        head = c.get("name") or ""
        if t == "poi" and a.get("street") and a.get("street") != head:
            head += ", " + " ".join(x for x in (a.get("street"), a.get("number")) if x)
    parts = [head]
    if locality and locality != head:
        parts.append(locality)
    return ", ".join(p for p in parts if p)


def run(datasets: DatasetRegistry, params: SuggestParams) -> dict[str, Any]:
    country = normalize_country(params.country)
    text = (params.q or "").strip()
    if len(text) < 2:
        return {"suggestions": []}
    q = parse(text, prefix=not text.endswith(" "))
    merged = []
    for ds in datasets.all():
        # while typing, what is near matters more than for a full address
        merged.extend(
            matcher_for(ds).match(q, country=country, near=params.near, limit=params.limit * 3, near_weight=0.3)
        )
    merged.sort(key=lambda c: -c["score"])
    floor = 0.3 * merged[0]["score"] if merged else 0.0  # far weaker matches are noise
    out, seen = [], set()
    for c in merged:
        if c["score"] < floor:
            break
        text_ = label(c)
        if text_ in seen:
            continue
        seen.add(text_)
        out.append(
            {
                "text": text_,
                "type": c["type"],
                "coord": c["coord"],
                "address": c["address"],
                "score": c["score"],
                "region": c["region"],
            }
        )
        if len(out) >= params.limit:
            break
    return {"suggestions": out}
