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
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

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
OSRM = peers.url(peers.OSRM_CH)
VALHALLA = peers.url(peers.VALHALLA)


def valhalla_path(a, b, steps: bool) -> str:
    """The same request as ``bench.routing`` POSTs, as a GET (wrk sends one method here)."""
    return "/route?json=" + quote(json.dumps(valhalla_request(a, b, steps), separators=(",", ":")), safe="")


def lua_script(paths: list[str], headers: dict[str, str]) -> str:
    lines = [f'wrk.headers["{k}"] = "{v}"' for k, v in headers.items()]
    lines.append("local paths = {" + ",".join(f'"{p}"' for p in paths) + "}")
    lines.append("local i = 0")
    lines.append('request = function()\n  i = i % #paths + 1\n  return wrk.format("GET", paths[i])\nend')
    # non-2xx answers are counted by wrk itself ("Non-2xx or 3xx responses")
    return "\n".join(lines) + "\n"


def run_wrk(url: str, paths: list[str], headers: dict[str, str], seconds: int, connections: int) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(lua_script(paths, headers))
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
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)", out)
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}
    return {
        "requests_per_s": round(rps, 1),
        "non_2xx": int(errors.group(1)) if errors else 0,
        "p50_ms": round(float(p50.group(1)) * scale[p50.group(2)], 3) if p50 else None,
    }


def median_of(rounds: list[dict]) -> dict:
    """One row for several wrk runs of an engine: the medians, each round's p50, every non-2xx."""
    p50s = [r["p50_ms"] for r in rounds if r["p50_ms"] is not None]
    return {
        "requests_per_s": round(statistics.median(r["requests_per_s"] for r in rounds), 1),
        "p50_ms": round(statistics.median(p50s), 3) if p50s else None,
        "p50_ms_rounds": [r["p50_ms"] for r in rounds],
        "non_2xx": sum(r["non_2xx"] for r in rounds),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--regions", default="monaco,helsinki")
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=1, help="runs per engine, taken in turns; the median is reported")
    ap.add_argument("--start-peers", action="store_true", help="switch the peers to each region")
    ap.add_argument("--data-dir", default="/tmp/meridian-bench-data")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    data_dir = Path(args.data_dir)
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


if __name__ == "__main__":
    raise SystemExit(main())
