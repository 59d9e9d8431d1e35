"""Meridian and Nominatim side by side on the same query files, in one run.

    python -m bench.search_peers                        # both regions, all modes
    python -m bench.search_peers --regions helsinki --modes geocode reverse

Meridian runs in process (bench.quality); Nominatim runs in process too, through its Python API
(nominatim_api) inside the peers kit's own virtualenv (a child process started here with
``$PEERS_DIR/venv-nominatim/bin/python``), against the kit's PostgreSQL, which must be running
(``cd ../shared/peers && ./serve.sh start <region>`` starts it; both regions' databases live in
the same cluster). Each engine times its own calls (the child times Nominatim's), warm-up first.
Hits are scored here by the same functions for both (bench.quality.score).

Suggest: Nominatim has no autocomplete; prefixes are sent as searches (as its users must).
Nearest: Nominatim's search_category near the point (top-1 among its results).
Prints one table per region and mode, writes bench/results/search-peers.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import peers
from bench.quality import PROJECT_ROOT, RESULTS, open_datasets, print_table, run_meridian, summarize

PEERS_DIR = Path(peers.PEERS_DIR)

# Runs inside the kit's Nominatim virtualenv: {"project", "mode", "items"} on argv[1] (a file),
# answers (the bench.quality answer format) as JSON on stdout.
NOMINATIM_CLIENT = r"""
import json, sys, time
import nominatim_api as napi

job = json.load(open(sys.argv[1], encoding="utf-8"))
mode, items = job["mode"], job["items"]

def street_of(r):
    if r is None:
        return None
    if r.rank_address in (26, 27) and r.names:
        return r.names.get("name")
    for a in r.address_rows or []:
        if a.isaddress and a.rank_address in (26, 27) and a.names:
            return a.names.get("name")
    return None

def ask(api, it):
    t0 = time.perf_counter()
    if mode == "geocode":
        s = it.get("structured")
        if s:
            street = " ".join(x for x in (s.get("number"), s.get("street")) if x)
            res = api.search_address(street=street, city=s.get("city"), postalcode=s.get("postcode"),
                                     max_results=5)
        else:
            res = api.search(it["query"], max_results=5)
        ms = (time.perf_counter() - t0) * 1000
        return {"coords": [[r.centroid.lat, r.centroid.lon] for r in res], "ms": ms}
    if mode == "suggest":
        res = api.search(it["prefix"], max_results=5)
        ms = (time.perf_counter() - t0) * 1000
        return {"texts": [(r.names or {}).get("name") or "" for r in res], "ms": ms}
    if mode == "reverse":
        r = api.reverse(napi.Point(it["lng"], it["lat"]), address_details=True)
        ms = (time.perf_counter() - t0) * 1000
        return {"streets": [street_of(r)] if r is not None else [], "ms": ms}
    if mode == "nearest":
        k, v = it["category"].split("=", 1)
        res = api.search_category([(k, v)], near=napi.Point(it["lng"], it["lat"]),
                                  near_radius=0.05, max_results=5)
        ms = (time.perf_counter() - t0) * 1000
        return {"coords": [[r.centroid.lat, r.centroid.lon] for r in res],
                "osm": [r.osm_object[0].lower() + str(r.osm_object[1]) for r in res if r.osm_object],
                "ms": ms}
    raise ValueError(mode)

with napi.NominatimAPI(job["project"]) as api:
    for it in items[:20]:
        ask(api, it)
    out = [ask(api, it) for it in items]
json.dump(out, sys.stdout)
"""


def nominatim_answers(region: str, mode: str, items: list[dict]) -> list[dict] | None:
    python = PEERS_DIR / "venv-nominatim" / "bin" / "python"
    project = PEERS_DIR / "regions" / region / "nominatim"
    if not python.exists() or not project.exists():
        print(f"  (Nominatim not available for {region}: {python} / {project} missing)")
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
        json.dump({"project": str(project), "mode": mode, "items": items}, fh)
        job = fh.name
    try:
        proc = subprocess.run(
            [str(python), "-c", NOMINATIM_CLIENT, job], capture_output=True, text=True, timeout=900, check=False
        )
    finally:
        os.unlink(job)
    if proc.returncode != 0:
        print(f"  (Nominatim failed for {region}/{mode}: {proc.stderr.strip().splitlines()[-1:]})")
        return None
    return json.loads(proc.stdout)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Meridian vs Nominatim search quality and latency")
    ap.add_argument("--regions", nargs="*", default=["monaco", "helsinki"])
    ap.add_argument("--modes", nargs="*", default=["geocode", "suggest", "reverse", "nearest"])
    ap.add_argument("--data-dir", type=Path, default=None)
    args = ap.parse_args(argv)
    datasets = open_datasets(args.data_dir)
    report: dict = {}
    for region in args.regions:
        for mode in args.modes:
            path = PROJECT_ROOT / "bench" / "data" / f"{region}-{mode}.json"
            items = json.loads(path.read_text(encoding="utf-8"))
            summaries = {"meridian": summarize(mode, items, run_meridian(mode, items, datasets))}
            nom = nominatim_answers(region, mode, items)
            if nom is not None:
                summaries["nominatim"] = summarize(mode, items, nom)
            print_table(f"{region} {mode} ({len(items)} queries, {path.name})", summaries)
            sys.stdout.flush()
            report[f"{region}/{mode}"] = summaries
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "search-peers.json"
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nwritten {out.relative_to(PROJECT_ROOT)}")


if __name__ == "__main__":
    main()
