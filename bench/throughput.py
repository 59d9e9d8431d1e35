"""Routing throughput with 8 connections: Meridian (its own gunicorn, 2 workers, as
``config/gunicorn.py`` starts it) next to OSRM and Valhalla, measured by ``wrk`` on the same seeded
pairs (a Lua script cycles through them), one engine after the other, each region in turn.

    PEERS_DIR=... .venv/bin/python -m bench.throughput [--regions monaco,helsinki] [--seconds 10]
                                                        [--connections 8] [--rounds 1] [--start-peers] [--out F]

``--rounds N`` runs every engine N times in turn (Meridian, OSRM, Valhalla, Meridian, ...) and
reports the median of the rounds, with each round's p50 kept: a shared machine drifts within a
run, and taking turns lets the drift reach every engine alike.

With ``--connections 1`` (``--out bench/results/latency-wrk.json``) it measures the sequential
latency of the servers alone: ``wrk`` is a lean C client, whereas the Python client of
``bench.routing`` (in the benchmark's own process, which also starts the gunicorn) adds
0.1-0.2 ms to OSRM's answers and 0.3-0.45 ms to Meridian's, which flatters the ratio (Helsinki
with steps: 2.3x there; 3.0x from the same client code in a separate process, whether or not it
imports the engine; measured 2026-11-22).

Needs ``wrk`` (Debian package). Requests: ``/v1/routing`` (key check and quota included), OSRM
``/route/v1/driving`` with ``overview=full``, Valhalla ``/route`` (GET, ``json=``), each with and
without turn-by-turn steps. Results: bench/results/throughput.json.

``--mix`` (``--out bench/results/throughput-mix.json``) measures the lookups a backend batches,
Meridian next to OSRM CH in one run, at every count of ``--connections`` (default 8 and 1):

- per region (the peers switched to it): route with steps, Meridian and OSRM on the same pairs;
  then the region's mix, Meridian cycling through geocoding, reverse geocoding, suggest and route
  with steps (one of each in turn, the quality sets' queries of bench/data/), OSRM through the
  part of it that it has: the same routes, and ``/nearest`` (a snap to the road) at the
  reverse-geocoding points;
- Meridian's mix of both samples together (region ``both``): the load a backend serving both
  regions sends.

Each row has requests/s, p50, p99, non-2xx and 5xx (counted by the Lua script: a geocoding
query may answer 404, which is an answer; a 5xx is a failure). The load average is recorded at
the start and the end of the run.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote, urlencode

from bench import peers
from bench.peers import peers_region, start_peers
from bench.routing import (
    ROADS,
    SAMPLES,
    make_pairs,
    meridian_path,
    osrm_path,
    own_server,
    valhalla_request,
)
from config.settings import PROJECT_ROOT
from engine.dataset import DatasetRegistry
from engine.ingest.pipeline import import_pbf

OUT = PROJECT_ROOT / "bench" / "results" / "throughput.json"
MIX_OUT = PROJECT_ROOT / "bench" / "results" / "throughput-mix.json"
QUERIES = PROJECT_ROOT / "bench" / "data"
# wrk's threads count the answers by status; done() adds the threads' counts up and prints them
STATUS_COUNTS = """local threads = {}
setup = function(thread) table.insert(threads, thread) end
init = function(args) server_errors = 0 end
response = function(status, headers, body)
  if status >= 500 then server_errors = server_errors + 1 end
end
done = function(summary, latency, requests)
  local n = 0
  for _, t in ipairs(threads) do n = n + t:get("server_errors") end
  io.write(string.format("5xx responses: %d\\n", n))
end
"""
OSRM = peers.url(peers.OSRM_CH)
VALHALLA = peers.url(peers.VALHALLA)


def valhalla_path(a, b, steps: bool) -> str:
    """The same request as ``bench.routing`` POSTs, as a GET (wrk sends one method here)."""
    return "/route?json=" + quote(json.dumps(valhalla_request(a, b, steps), separators=(",", ":")), safe="")


def lua_script(paths: list[str], headers: dict[str, str], count_5xx: bool = False) -> str:
    lines = [f'wrk.headers["{k}"] = "{v}"' for k, v in headers.items()]
    lines.append("local paths = {" + ",".join(f'"{p}"' for p in paths) + "}")
    lines.append("local i = 0")
    lines.append('request = function()\n  i = i % #paths + 1\n  return wrk.format("GET", paths[i])\nend')
    # non-2xx answers are counted by wrk itself ("Non-2xx or 3xx responses"), 5xx by the script
    return "\n".join(lines) + "\n" + (STATUS_COUNTS if count_5xx else "")


def run_wrk(
    url: str, paths: list[str], headers: dict[str, str], seconds: int, connections: int, count_5xx: bool = False
) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(lua_script(paths, headers, count_5xx))
    threads = min(2, connections)
    out = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", f.name, url],
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds + 60,
    ).stdout
    Path(f.name).unlink()
    found = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if found is None:
        raise RuntimeError(f"wrk printed no Requests/sec line:\n{out}")
    rps = float(found.group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    server_errors = re.search(r"5xx responses: (\d+)", out)
    row = {
        "requests_per_s": round(rps, 1),
        "non_2xx": int(errors.group(1)) if errors else 0,
        "p50_ms": _percentile_ms(out, "50"),
    }
    if count_5xx:
        row["p99_ms"] = _percentile_ms(out, "99")
        row["status_5xx"] = int(server_errors.group(1)) if server_errors else None
    return row


def _percentile_ms(wrk_output: str, percent: str) -> float | None:
    """A line of wrk's latency distribution (``--latency``), in ms."""
    found = re.search(percent + r"%\s+([\d.]+)(us|ms|s)\b", wrk_output)
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}
    return round(float(found.group(1)) * scale[found.group(2)], 3) if found else None


def median_of(rounds: list[dict]) -> dict:
    """One row for several wrk runs of an engine: the medians, each round's p50, every non-2xx
    (and 5xx)."""
    row = {
        "requests_per_s": round(statistics.median(r["requests_per_s"] for r in rounds), 1),
        "p50_ms": _median(r["p50_ms"] for r in rounds),
        "p50_ms_rounds": [r["p50_ms"] for r in rounds],
        "non_2xx": sum(r["non_2xx"] for r in rounds),
    }
    if "p99_ms" in rounds[0]:
        row["p99_ms"] = _median(r["p99_ms"] for r in rounds)
        row["status_5xx"] = sum(r["status_5xx"] or 0 for r in rounds)
    return row


def _median(values) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 3) if known else None


def mix_paths(region: str, pairs: list) -> dict[str, list[str]]:
    """The lookups of the mix for one region, by kind: Meridian's paths and, for the kinds OSRM
    has, OSRM's paths for the same places (routes with steps; ``/nearest`` at the reverse points)."""
    geocode, reverse, suggest = (
        json.loads((QUERIES / f"{region}-{name}.json").read_text()) for name in ("geocode", "reverse", "suggest")
    )
    return {
        "meridian": _interleaved(
            ["/v1/geocoding?" + urlencode({"query": q["query"]}) for q in geocode],
            [f"/v1/reverse-geocoding?lat={q['lat']}&lng={q['lng']}" for q in reverse],
            ["/v1/suggest?" + urlencode({"q": q["prefix"]}) for q in suggest],
            [meridian_path(a, b, True) for a, b in pairs],
        ),
        "osrm": _interleaved(
            [f"/nearest/v1/driving/{q['lng']},{q['lat']}?number=1" for q in reverse],
            [osrm_path(a, b, True) for a, b in pairs],
        ),
    }


def _interleaved(*kinds: list[str]) -> list[str]:
    """One of each kind in turn, as many turns as the longest kind has items (shorter ones cycle)."""
    turns = max(len(k) for k in kinds)
    cycles = [itertools.cycle(k) for k in kinds]
    return [next(c) for _ in range(turns) for c in cycles]


def run_mix(args, url: str, key: str, regions: list[str], datasets: DatasetRegistry) -> list[dict]:
    """The rows of ``--mix`` (module doc): the engines take turns within each row, ``--rounds`` times."""
    connections = [int(c) for c in str(args.connections).split(",")]
    headers = {"X-API-Key": key}
    results: list[dict] = []
    both: list[list[str]] = []

    def measure(region: str, kind: str, by_engine: dict[str, tuple[str, list[str], dict]], conns: int) -> None:
        runs: dict[str, list[dict]] = {name: [] for name in by_engine}
        for _ in range(args.rounds):
            for name, (base, paths, sent_headers) in by_engine.items():
                runs[name].append(run_wrk(base, paths, sent_headers, args.seconds, conns, count_5xx=True))
        for name, rounds in runs.items():
            row = {**median_of(rounds), "region": region, "engine": name, "kind": kind, "connections": conns}
            results.append(row)
            print(
                f"{region:9} {name:9} {kind:12} {conns:>5} {row['requests_per_s']:>8.0f} {row['p50_ms'] or 0:>7.2f} "
                f"{row['p99_ms'] or 0:>7.2f} {row['non_2xx']:>7} {row['status_5xx']:>5}",
                flush=True,
            )

    print(
        f"{'region':9} {'engine':9} {'kind':12} {'conns':>5} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'non-2xx':>7} {'5xx':>5}"
    )
    for region in regions:
        if args.start_peers:
            start_peers(region)
        if peers_region() != region:
            raise SystemExit(f"the peers do not serve {region}: pass --start-peers (or serve.sh start {region})")
        pairs = make_pairs(datasets.require(region).router, args.pairs, args.seed)
        paths = mix_paths(region, pairs)
        both.append(paths["meridian"])
        for conns in connections:
            routes = {
                "meridian": (url, [meridian_path(a, b, True) for a, b in pairs], headers),
                "osrm": (OSRM, [osrm_path(a, b, True) for a, b in pairs], {}),
            }
            measure(region, "route+steps", routes, conns)
        mix = {"meridian": (url, paths["meridian"], headers), "osrm": (OSRM, paths["osrm"], {})}
        measure(region, "mix", mix, connections[0])
    if len(both) > 1:
        measure("both", "mix", {"meridian": (url, _interleaved(*both), headers)}, connections[0])
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--regions", default="monaco,helsinki")
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--connections", default=None, help="connections (--mix: a list, default 8,1; else 8)")
    ap.add_argument("--rounds", type=int, default=1, help="runs per engine, taken in turns; the median is reported")
    ap.add_argument("--start-peers", action="store_true", help="switch the peers to each region")
    ap.add_argument("--mix", action="store_true", help="the lookup mix next to OSRM CH (module doc)")
    ap.add_argument("--data-dir", default=None, help="default /tmp/meridian-bench-data (--mix: ...-full)")
    ap.add_argument("--out", default=None, help=f"default {OUT} (--mix: {MIX_OUT})")
    args = ap.parse_args(argv)
    if args.mix:
        return main_mix(args, argv)
    args.connections = int(args.connections or 8)
    data_dir = Path(args.data_dir or "/tmp/meridian-bench-data")
    args.out = args.out or str(OUT)
    regions = [r for r in args.regions.split(",") if r]
    for region in regions:
        import_pbf(SAMPLES / f"{region}.osm.pbf", data_dir, region, stages=ROADS)
    datasets = DatasetRegistry(data_dir)
    results = []
    print(f"{'region':9} {'engine':9} {'steps':>5} {'req/s':>8} {'p50 ms':>7} {'non-2xx':>7}")
    with contextlib.ExitStack() as stack:
        url, key = stack.enter_context(own_server(data_dir))
        for region in regions:
            if args.start_peers:
                start_peers(region)
            peers_up = peers_region() == region
            pairs = make_pairs(datasets.require(region).router, args.pairs, args.seed)
            engines = [("meridian", url, meridian_path, {"X-API-Key": key})]
            if peers_up:
                engines += [("osrm", OSRM, osrm_path, {}), ("valhalla", VALHALLA, valhalla_path, {})]
            for steps in (False, True):
                runs: dict[str, list[dict]] = {name: [] for name, *_ in engines}
                for _ in range(args.rounds):
                    for name, base, path_of, headers in engines:
                        runs[name].append(
                            run_wrk(
                                base, [path_of(a, b, steps) for a, b in pairs], headers, args.seconds, args.connections
                            )
                        )
                for name, rounds in runs.items():
                    row = {**median_of(rounds), "region": region, "engine": name, "steps": steps}
                    results.append(row)
                    print(
                        f"{region:9} {name:9} {str(steps):>5} {row['requests_per_s']:>8.0f} "
                        f"{row['p50_ms'] or float('nan'):>7.2f} {row['non_2xx']:>7}"
                    )
    doc = {
        "benchmark": "throughput",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join(["python -m bench.throughput", *(sys.argv[1:] if argv is None else argv)]),
        "connections": args.connections,
        "seconds": args.seconds,
        "rounds": args.rounds,
        "meridian_workers": 2,
        "results": results,
    }
    Path(args.out).write_text(json.dumps(doc, indent=1))
    print(f"written {args.out}")
    return 0


def main_mix(args, argv: list[str] | None) -> int:
    args.connections = args.connections or "8,1"
    data_dir = Path(args.data_dir or "/tmp/meridian-bench-data-full")
    regions = [r for r in args.regions.split(",") if r]
    for region in regions:  # every stage: the mix geocodes and suggests
        import_pbf(SAMPLES / f"{region}.osm.pbf", data_dir, region)
    load_start = os.getloadavg()
    with own_server(data_dir) as (url, key):
        results = run_mix(args, url, key, regions, DatasetRegistry(data_dir))
    doc = {
        "benchmark": "throughput-mix",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join(["python -m bench.throughput", *(sys.argv[1:] if argv is None else argv)]),
        "seconds": args.seconds,
        "rounds": args.rounds,
        "meridian_workers": 2,
        "cpus": os.cpu_count(),
        "load_average": {"start": [round(x, 2) for x in load_start], "end": [round(x, 2) for x in os.getloadavg()]},
        "results": results,
    }
    out = Path(args.out or MIX_OUT)
    out.write_text(json.dumps(doc, indent=1))
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
