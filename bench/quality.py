"""Search quality runner (issue 5, item 6): hit rates per kind and latency, Meridian in process.

    python -m bench.quality geocode --queries bench/data/helsinki-geocode.json
    python -m bench.quality suggest --queries bench/data/helsinki-suggest.json
    python -m bench.quality reverse --queries bench/data/helsinki-reverse.json
    python -m bench.quality nearest --queries bench/data/helsinki-nearest.json

Query files (bench/make_queries.py builds them from the samples):
    geocode  [{"query", "expect": {"lat", "lng"}, "tolerance_m", "kind", ["structured": {...}]}]
             hit@k: one of the first k candidates lies within tolerance_m of expect
    suggest  [{"prefix", "expect_text"}]      hit@5: expect_text is in one of the 5 suggestion texts
    reverse  [{"lat", "lng", "expect_street"}]  hit: the first candidate names that street
    nearest  [{"lat", "lng", "category", "expect": {...}, "tolerance_m", ["expect_osm"],
              ["expect_distance_m"]}]  top-1 is the expected object (else within tolerance);
             areas (kind "area"): also dist±5m, the answer's distance within 5 m of the
             distance to the area's outline

Data: DATA_DIR (or --data-dir) with the regions imported; by default the samples are imported
into var/bench-data (idempotent). Prints a table, writes bench/results/quality-<mode>-<file>.json.
The scoring functions are shared with bench/search_peers.py (Nominatim side by side).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import defaultdict
from pathlib import Path

from config.settings import PROJECT_ROOT
from engine.geo import haversine_m

RESULTS = PROJECT_ROOT / "bench" / "results"
SAMPLES = PROJECT_ROOT / "data" / "samples"


# -- answers: what an engine returned for one query, engine-independent ------------------------
# {"coords": [[lat, lng], ...], "streets": [str|None, ...], "texts": [str, ...], "ms": float}


def meridian_answer(mode: str, item: dict, datasets) -> dict:
    from engine.services import geocoding, proximity, reverse_geocoding, suggest  # noqa: PLC0415

    t0 = time.perf_counter()
    if mode == "geocode":
        s = item.get("structured")
        params = geocoding.GeocodeParams(**s, limit=5) if s else geocoding.GeocodeParams(query=item["query"], limit=5)
        cands = geocoding.run(datasets, params)["candidates"]
        ms = (time.perf_counter() - t0) * 1000
        return {"coords": [[c["coord"]["lat"], c["coord"]["lng"]] for c in cands], "ms": ms}
    if mode == "suggest":
        res = suggest.run(datasets, suggest.SuggestParams(q=item["prefix"], limit=5))["suggestions"]
        ms = (time.perf_counter() - t0) * 1000
        return {"texts": [s["text"] for s in res], "ms": ms}
    if mode == "reverse":
        res = reverse_geocoding.run(
            datasets, reverse_geocoding.ReverseParams(lat=item["lat"], lng=item["lng"], radius=100.0)
        )["candidates"]
        ms = (time.perf_counter() - t0) * 1000
        return {"streets": [c["address"]["street"] for c in res], "ms": ms}
    if mode == "nearest":
        res = proximity.run(
            datasets,
            proximity.NearestParams(
                lat=item["lat"],
                lng=item["lng"],
                categories=(item["category"],),
                limit=1,
                radius=5000.0,
            ),
        )["results"]
        ms = (time.perf_counter() - t0) * 1000
        return {
            "coords": [[r["coord"]["lat"], r["coord"]["lng"]] for r in res],
            "osm": [(r["osm"]["type"] or "?")[0] + str(r["osm"]["id"]) for r in res],
            "distance": [r["distance"] for r in res],
            "ms": ms,
        }
    raise ValueError(mode)


def _norm(s: str | None) -> str:
    from engine.search.normalize import normalize  # noqa: PLC0415

    return normalize(s or "")


def score(mode: str, item: dict, answer: dict) -> dict[str, bool]:
    if mode == "nearest" and item.get("expect_osm") and answer.get("osm"):
        ok = answer["osm"][0] == item["expect_osm"]
        out = {"hit@1": ok, "hit@5": item["expect_osm"] in answer["osm"][:5]}
        if "expect_distance_m" in item:  # areas: the distance is to the outline, as the ranking
            out["dist±5m"] = ok and abs(answer["distance"][0] - item["expect_distance_m"]) <= 5.0
        return out
    if mode in ("geocode", "nearest"):
        e = item["expect"]
        ok = [
            haversine_m(e["lat"], e["lng"], lat, lng) <= item.get("tolerance_m", 50.0)
            for lat, lng in answer.get("coords", [])
        ]
        return {"hit@1": bool(ok[:1] and ok[0]), "hit@5": any(ok[:5])}
    if mode == "suggest":
        want = _norm(item["expect_text"])
        texts = [_norm(t) for t in answer.get("texts", [])[:5]]
        return {"hit@5": any(want in t for t in texts), "hit@1": bool(texts and want in texts[0])}
    if mode == "reverse":
        streets = answer.get("streets", [])
        return {"hit@1": bool(streets) and _norm(streets[0]) == _norm(item["expect_street"])}
    raise ValueError(mode)


def summarize(mode: str, items: list[dict], answers: list[dict]) -> dict:
    per_kind: dict[str, list[dict]] = defaultdict(list)
    lat_ms = []
    for item, ans in zip(items, answers, strict=True):
        s = score(mode, item, ans)
        per_kind[item.get("kind", mode)].append(s)
        per_kind["overall"].append(s)
        lat_ms.append(ans["ms"])
    table = {}
    for kind, scores in per_kind.items():
        row = {"n": len(scores)}
        metrics = [m for m in scores[0] if kind != "overall" or all(m in x for x in scores)]
        for metric in metrics:
            row[metric] = round(sum(x.get(metric, False) for x in scores) / len(scores), 3)
        table[kind] = row
    lat_ms.sort()
    latency = {
        "p50_ms": round(statistics.median(lat_ms), 3) if lat_ms else None,
        "p95_ms": round(lat_ms[int(0.95 * (len(lat_ms) - 1))], 3) if lat_ms else None,
        "p99_ms": round(lat_ms[int(0.99 * (len(lat_ms) - 1))], 3) if lat_ms else None,
    }
    return {"kinds": table, "latency": latency}


def print_table(title: str, summaries: dict[str, dict]) -> None:
    """summaries: engine name -> summarize() output; one row per kind, columns per engine."""
    engines = list(summaries)
    kinds = []
    for s in summaries.values():
        for k in s["kinds"]:
            if k not in kinds and k != "overall":
                kinds.append(k)
    kinds.append("overall")
    metrics = []
    for s in summaries.values():
        for row in s["kinds"].values():
            for m in row:
                if m != "n" and m not in metrics:
                    metrics.append(m)
    head = f"{'kind':<16}{'n':>5}" + "".join(f"{e + ' ' + m:>22}" for e in engines for m in metrics)
    print(f"\n{title}\n{head}\n{'-' * len(head)}")
    for k in kinds:
        n = next((s["kinds"][k]["n"] for s in summaries.values() if k in s["kinds"]), 0)
        cells = ""
        for e in engines:
            row = summaries[e]["kinds"].get(k, {})
            for m in metrics:
                v = row.get(m)
                cells += f"{'-' if v is None else f'{v:.3f}':>22}"
        print(f"{k:<16}{n:>5}{cells}")
    for e in engines:
        lat = summaries[e]["latency"]
        print(f"{e}: latency p50 {lat['p50_ms']} ms, p95 {lat['p95_ms']} ms, p99 {lat['p99_ms']} ms")


def open_datasets(data_dir: Path | None):
    from engine.dataset import DatasetRegistry  # noqa: PLC0415
    from engine.ingest.pipeline import import_pbf  # noqa: PLC0415

    if data_dir is None:
        env = os.environ.get("DATA_DIR")
        data_dir = Path(env) if env else PROJECT_ROOT / "var" / "bench-data"
        for region in ("monaco", "helsinki"):
            import_pbf(SAMPLES / f"{region}.osm.pbf", data_dir, region)
    return DatasetRegistry(data_dir)


def rss_mb() -> float:
    """Resident memory of this process (MB), from /proc (Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def run_meridian(mode: str, items: list[dict], datasets, warmup: int = 20) -> list[dict]:
    for item in items[:warmup]:
        meridian_answer(mode, item, datasets)
    return [meridian_answer(mode, item, datasets) for item in items]


def write_result(mode: str, queries: Path, payload: dict, prefix: str = "quality") -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"{prefix}-{mode}-{queries.stem}.json"
    out.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Meridian search quality runner")
    ap.add_argument("mode", choices=("geocode", "suggest", "reverse", "nearest"))
    ap.add_argument("--queries", required=True, type=Path)
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--show-misses", type=int, default=0, help="print up to N misses")
    args = ap.parse_args(argv)
    items = json.loads(args.queries.read_text(encoding="utf-8"))
    import engine.services.geocoding  # noqa: F401, PLC0415 - code loaded before the baseline
    import engine.services.proximity  # noqa: F401, PLC0415
    import engine.services.reverse_geocoding  # noqa: F401, PLC0415

    datasets = open_datasets(args.data_dir)
    base = rss_mb()
    answers = run_meridian(args.mode, items, datasets)
    summary = summarize(args.mode, items, answers)
    summary["memory_mb"] = {"process_rss": round(rss_mb(), 1), "search_indexes_and_caches": round(rss_mb() - base, 1)}
    print_table(f"{args.mode} — {args.queries.name} ({len(items)} queries)", {"meridian": summary})
    if args.show_misses:
        shown = 0
        for item, ans in zip(items, answers, strict=True):
            s = score(args.mode, item, ans)
            primary = "hit@5" if args.mode == "suggest" else "hit@1"
            if not s[primary] and shown < args.show_misses:
                shown += 1
                print(
                    "MISS",
                    json.dumps(item, ensure_ascii=False),
                    "->",
                    json.dumps({k: v for k, v in ans.items() if k != "ms"}, ensure_ascii=False)[:300],
                )
    out = write_result(
        args.mode, args.queries, {"mode": args.mode, "queries": str(args.queries), "engines": {"meridian": summary}}
    )
    mem = summary["memory_mb"]
    print(
        f"memory: process RSS {mem['process_rss']} MB, of which the loaded search indexes and "
        f"their caches {mem['search_indexes_and_caches']} MB"
    )
    print(f"written {out.relative_to(PROJECT_ROOT)}")


if __name__ == "__main__":
    main()
