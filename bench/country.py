"""A country on one machine, measured as a new user meets it: generate, import, serve, replicate.

For each size (road-network nodes of bench/synthetic.py's city, with ``--addresses-per-node``
house numbers and POIs from bench/synthetic_search.py, 2.5 by default: 10M nodes, 25M
addresses), in this order:

1. generate the PBF (kept in ``--work`` and reused by later runs);
2. ``meridian import`` under ``/usr/bin/time -v``: wall time and peak RSS of the whole import,
   and each stage's seconds and peak RSS from the manifest (``engine.progress``);
3. the dataset's size on disk;
4. the Procfile's processes as a deployment runs them (bench/load_deploy.py: gunicorn as
   config/gunicorn.py starts it, the Celery workers, Redis, PostgreSQL), timed from their start
   to ``/v1/health/ready`` = 200 and to the first answered route and isochrone;
5. over HTTP (bench/http_client.py's keep-alive connection, as the other benchmarks), one request
   at a time: route with steps (each profile of ``--route-profiles``, every imported one by
   default), isochrone (10 min, a new origin each time: no cache hit), geocode, suggest, reverse
   geocode; p50 and p95 over ``--queries`` each; then a second pass on other points
   (``second_pass``): the first pass meets a node whose page cache holds little of the dataset,
   the second one that has served for a while. Each pass counts the pages read back from disk
   (``paging``: the web workers' major faults and the machine's), which tells a node short of
   memory for its dataset from a slow search;
6. private memory (USS) of every gunicorn worker and every Celery process after the queries;
7. ``meridian dataset publish`` to a directory store and ``meridian dataset pull`` into a
   second data directory (a new node), timed;
8. with ``--osrm``, OSRM's MLD build of the same PBF with the peers kit (``OSRM_CH=0
   ENGINES=osrm build.sh``: extract, partition, customize), its wall time and peak RSS per step,
   killed past ``--osrm-max-gb`` (reported as not fitting).

Results: bench/results/country.json (one entry per size, merged with earlier runs); ``python -m
bench.report`` writes the table into docs/benchmarks.md.

    .venv/bin/python -m bench.country --nodes 1000000 [--profiles car] [--queries 200] [--osrm]
        [--reuse-import]   # keep an earlier run's import of the same size (its figures too)
        [--cold-cache]     # drop the dataset's cached pages before serving (a node after a reboot)
        [--route-profiles car]  # route only these of the imported profiles (paging, module doc)
        [--no-replicate]   # skip step 7 (publish and pull each hold another copy of the dataset)
        [--osrm-only]      # only OSRM's build, added to a size measured before
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import numpy as np
import psutil  # type: ignore[import-untyped]

from bench import page_cache, peers
from bench.http_client import Http
from bench.load_deploy import Deployment
from bench.memory import own_mb
from bench.peers import KIT as PEERS_KIT
from bench.procfs import machine_major_faults, major_faults
from config.settings import PROJECT_ROOT
from engine.identical_files import distinct_bytes

RESULTS = PROJECT_ROOT / "bench" / "results" / "country.json"
WORK = Path(os.environ.get("MERIDIAN_COUNTRY_DIR", "/tmp/meridian-country"))
REGION = "country"
HTTP_CLIENT = "bench/http_client.py"  # recorded with the latencies (earlier runs: requests)
WEB_PROCESS, WORKER_PROCESSES = "web", ("worker", "mapworker", "isoworker", "matrixworker", "optimworker")


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "cli.main", *args]


def _pct(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {
        "p50": round(float(np.percentile(values, 50)), 2),
        "p95": round(float(np.percentile(values, 95)), 2),
        "n": len(values),
    }


# -- 1-3: generate, import, size -----------------------------------------------------------------


def generate(nodes: int, addresses: int, pbf: Path) -> float | None:
    """The synthetic country's PBF; None when an earlier run left it."""
    if pbf.exists():
        return None
    t0 = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.synthetic",
            "--nodes",
            str(nodes),
            "--addresses",
            str(addresses),
            "--out",
            str(pbf),
        ],
        cwd=PROJECT_ROOT,
        check=True,
    )
    return round(time.perf_counter() - t0, 1)


TIME_FIELDS = {
    "Maximum resident set size (kbytes)": "peak_rss_kb",
    "Elapsed (wall clock) time (h:mm:ss or m:ss)": "wall",
    "User time (seconds)": "user_s",
    "System time (seconds)": "system_s",
    "Exit status": "exit_status",
}


def parse_time_v(text: str) -> dict[str, Any]:
    """The figures of GNU time's ``-v`` report that the table uses."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        key, _, value = line.strip().rpartition(": ")
        if key in TIME_FIELDS:
            out[TIME_FIELDS[key]] = value
    wall = [float(p) for p in out.get("wall", "0").split(":")]
    seconds = 0.0
    for part in wall:
        seconds = seconds * 60 + part
    return {
        "wall_s": round(seconds, 1),
        "peak_rss_mb": round(int(out.get("peak_rss_kb", 0)) / 1024, 1),
        "cpu_s": round(float(out.get("user_s", 0)) + float(out.get("system_s", 0)), 1),
        "exit_status": int(out.get("exit_status", -1)),
    }


def run_import(pbf: Path, data_dir: Path, log: Path, profiles: str) -> None:
    env = dict(os.environ, DATA_DIR=str(data_dir))
    cmd = ["/usr/bin/time", "-v", *_cli("import", str(pbf), "--name", REGION, "--profiles", profiles, "--force")]
    with open(log, "w") as fh:
        subprocess.run(cmd, cwd=PROJECT_ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT, check=False)


def _current(data_dir: Path) -> Path:
    """The imported region's current version."""
    return data_dir / "regions" / REGION / "current"


def _manifest(data_dir: Path) -> dict[str, Any]:
    return json.loads((_current(data_dir) / "manifest.json").read_text())


def import_figures(data_dir: Path, log: Path) -> dict[str, Any]:
    timed = parse_time_v(log.read_text())
    if timed["exit_status"] != 0:
        raise RuntimeError(f"import failed: see {log}")
    version = _current(data_dir)
    manifest = _manifest(data_dir)
    # each stage resets the process's peak (engine.progress): time -v sees the last stage's only
    timed["time_v_peak_rss_mb"] = timed.pop("peak_rss_mb")
    return {
        **timed,
        "peak_rss_mb": manifest["peak_rss_mb"],
        "peak_anon_mb": manifest.get("peak_anon_mb"),
        "profiles": manifest.get("profiles"),
        "stages": {
            name: {
                "seconds": report["seconds"],
                "peak_rss_mb": report.get("peak_rss_mb"),
                "peak_anon_mb": report.get("peak_anon_mb"),
            }
            for name, report in manifest["stages"].items()
        },
        "counts": manifest["counts"],
        "dataset_mb": round(distinct_bytes(version.resolve()) / 1e6, 1),
        "pbf_mb": round(Path(manifest["source"]["path"]).stat().st_size / 1e6, 1),
    }


# -- 4-6: serve and ask -------------------------------------------------------------------------


def sample_queries(data_dir: Path, n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` random addresses of the dataset (street, number, town, point)."""
    db = _current(data_dir) / "search.sqlite"
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        lo, hi = conn.execute("SELECT min(id), max(id) FROM features WHERE type = 'address'").fetchone()
        rng = np.random.default_rng(seed)
        out: list[dict[str, Any]] = []
        while len(out) < n:
            row = conn.execute(
                "SELECT street, housenumber, city, lat, lng FROM features WHERE id = ? AND type = 'address'",
                (int(rng.integers(lo, hi + 1)),),
            ).fetchone()
            if row and row[0] and row[1]:
                out.append({"street": row[0], "number": row[1], "town": row[2] or "", "lat": row[3], "lng": row[4]})
        return out
    finally:
        conn.close()


class Client:
    """One keep-alive connection with the key: bench.http_client's, the client of the other
    benchmarks' HTTP latencies (``requests`` adds about 0.65 ms of its own a call)."""

    def __init__(self, base_url: str, key: str) -> None:
        url = urlsplit(base_url)
        self.http = Http(url.hostname or "127.0.0.1", url.port or 80)
        self.headers = {"X-API-Key": key}

    def get(self, path: str, params: dict[str, Any]) -> tuple[float, int]:
        """(milliseconds to the last byte of the answer, HTTP status)."""
        seconds, status, _body = self.http.request("GET", f"{path}?{urlencode(params)}", headers=self.headers)
        return seconds * 1000, status


def _route(a: dict[str, Any], b: dict[str, Any]) -> dict[str, str]:
    return {
        "origin": f"{a['lat']:.7f},{a['lng']:.7f}",
        "destination": f"{b['lat']:.7f},{b['lng']:.7f}",
        "steps": "true",
    }


def _isochrone(a: dict[str, Any]) -> dict[str, str]:
    return {"lat": f"{a['lat']:.7f}", "lng": f"{a['lng']:.7f}", "time": "10"}


def first_answers(client: Client, started: float, places: list[dict[str, Any]]) -> dict[str, float]:
    """Seconds from the processes' start to each first answer (the caller waited for ready)."""
    out = {"ready_s": round(time.monotonic() - started, 1)}
    for name, path, params in (
        ("first_route_s", "/v1/routing", _route(places[0], places[1])),
        ("first_isochrone_s", "/v1/isochrone", _isochrone(places[2])),
        ("first_geocode_s", "/v1/geocoding", {"query": f"{places[3]['street']} {places[3]['number']}"}),
    ):
        _, status = client.get(path, params)
        if status != 200:
            raise RuntimeError(f"{path}: HTTP {status}")
        out[name] = round(time.monotonic() - started, 1)
    return out


@contextlib.contextmanager
def counting_paging(web: list[psutil.Process]) -> Iterator[dict[str, Any]]:
    """The pages read back from disk while the block runs: by the web workers ``web`` (each) and by
    the whole machine (the Celery workers, the page cache's other readers)."""
    counted: dict[str, Any] = {}
    before = [major_faults(p.pid) for p in web], machine_major_faults()
    yield counted
    counted["web_major_faults"] = [major_faults(p.pid) - b for p, b in zip(web, before[0], strict=True)]
    counted["machine_major_faults"] = machine_major_faults() - before[1]


def latencies(
    client: Client, places: list[dict[str, Any]], n: int, seed: int, profiles: tuple[str, ...] = ()
) -> dict[str, Any]:
    """p50 and p95 of each kind of request over ``n`` places; ``route`` is the car's, and each
    other imported profile of ``profiles`` is routed between the same points (``route_foot``,
    ``route_bicycle``)."""
    rng = np.random.default_rng(seed + 7)
    other_profiles = [p for p in profiles if p != "car"]
    kinds = ("route", *(f"route_{p}" for p in other_profiles), "isochrone", "geocode", "suggest", "reverse")
    timed: dict[str, list[float]] = {k: [] for k in kinds}
    failed: dict[str, int] = dict.fromkeys(timed, 0)
    for i in range(n):
        a, b = places[i], places[int(rng.integers(len(places)))]
        typed = f"{a['street']} {a['number']}"
        requests_ = {
            "route": ("/v1/routing", _route(a, b)),
            **{f"route_{p}": ("/v1/routing", {**_route(a, b), "profile": p}) for p in other_profiles},
            "isochrone": ("/v1/isochrone", _isochrone(b)),
            "geocode": ("/v1/geocoding", {"query": f"{typed}, {a['town']}" if a["town"] else typed}),
            "suggest": ("/v1/suggest", {"q": typed[: max(4, len(typed) - 3)]}),
            "reverse": ("/v1/reverse-geocoding", {"lat": f"{a['lat']:.7f}", "lng": f"{a['lng']:.7f}"}),
        }
        for kind, (path, params) in requests_.items():
            if kind == "isochrone" and i >= max(20, n // 5):
                continue  # a worker computes each (hundreds of ms): a fifth of them is enough
            ms, status = client.get(path, params)
            if status == 200:
                timed[kind].append(ms)
            else:
                failed[kind] += 1
    return {"ms": {k: _pct(v) for k, v in timed.items()}, "failed": failed}


def private_mb(proc: psutil.Process) -> float:
    return round(proc.memory_full_info().uss / 2**20, 1)


def memory(dep: Deployment) -> dict[str, Any]:
    """Private memory (USS) and own memory (private dirty pages) of each gunicorn worker and each
    Celery process (main and pool): USS also counts the dataset's mapped pages no other process
    touched, own memory is what each process costs alone (:mod:`bench.memory`)."""
    web = dep.children(WEB_PROCESS)
    workers = []
    for name in WORKER_PROCESSES:
        main = psutil.Process(dep.procs[name].pid)
        workers += [main, *main.children(recursive=True)]
    worker_private = [private_mb(p) for p in workers]
    return {
        "web_private_mb": [private_mb(p) for p in web],
        "web_own_mb": [own_mb(p.pid) for p in web],
        "worker_private_mb": worker_private,
        "worker_private_total_mb": round(sum(worker_private), 1),
        "worker_own_total_mb": round(sum(own_mb(p.pid) for p in workers), 1),
    }


def route_profiles(imported: tuple[str, ...], asked: str | None) -> tuple[str, ...]:
    """The profiles the passes route: ``asked`` (comma-separated), else every imported one."""
    if not asked:
        return imported
    chosen = tuple(p for p in asked.split(",") if p)
    missing = [p for p in chosen if p not in imported]
    if missing:
        raise SystemExit(f"--route-profiles: {', '.join(missing)} not imported ({', '.join(imported)})")
    return chosen


def measured_pass(
    dep: Deployment, client: Client, places: list[dict[str, Any]], n: int, seed: int, profiles: tuple[str, ...]
) -> dict[str, Any]:
    """One pass of :func:`latencies`, with the pages read back from disk while it ran."""
    with counting_paging(dep.children(WEB_PROCESS)) as paging:
        out = latencies(client, places, n, seed, profiles)
    return {**out, "paging": paging}


def serve_and_measure(
    data_dir: Path, queries: int, seed: int, asked_profiles: str | None = None, cold_cache: bool = False
) -> dict[str, Any]:
    places = sample_queries(data_dir, queries + 4, seed)
    profiles = route_profiles(tuple(_manifest(data_dir).get("profiles") or ("car",)), asked_profiles)
    if cold_cache:
        page_cache.evict(data_dir)
    dep = Deployment(data_dir)
    try:
        dep.start_redis()
        dep.start_postgres()
        dep.create_database()
        key = dep.create_keys()["load"]
        started = time.monotonic()
        dep.start_processes()
        dep.wait_ready(timeout=1800)
        client = Client(dep.base_url, key)
        out: dict[str, Any] = {
            "client": HTTP_CLIENT,
            "route_profiles": list(profiles),
            "cold_cache": cold_cache,
            "start": first_answers(client, started, places),
        }
        out.update(measured_pass(dep, client, places[4:], queries, seed, profiles))
        # other points again, the node now serving for as long as the first pass took: what its
        # users see once the pages their requests share are cached
        again = sample_queries(data_dir, queries, seed + 1)
        out["second_pass"] = measured_pass(dep, client, again, queries, seed + 1, profiles)
        out["memory"] = memory(dep)
        out["dataset_cached_mb"] = round(page_cache.resident_bytes(data_dir) / 2**20)
        return out
    finally:
        dep.stop()


# -- 7: publish and pull --------------------------------------------------------------------------


def publish_and_pull(data_dir: Path, work: Path) -> dict[str, float]:
    store, second = work / "store", work / "second-node"
    shutil.rmtree(store, ignore_errors=True)
    shutil.rmtree(second, ignore_errors=True)
    out = {}
    for name, args, data in (
        ("publish_s", ("dataset", "publish", REGION, "--to", str(store)), data_dir),
        ("pull_s", ("dataset", "pull", REGION, "--from", str(store)), second),
    ):
        t0 = time.perf_counter()
        subprocess.run(_cli(*args), cwd=PROJECT_ROOT, env=dict(os.environ, DATA_DIR=str(data)), check=True)
        out[name] = round(time.perf_counter() - t0, 1)
    shutil.rmtree(store, ignore_errors=True)
    shutil.rmtree(second, ignore_errors=True)
    return out


# -- 8: OSRM MLD beside it ------------------------------------------------------------------------


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += p.memory_info().rss
    return total


def osrm_mld(pbf: Path, name: str, max_gb: float) -> dict[str, Any]:
    """The peers kit's OSRM MLD build (``OSRM_CH=0 ENGINES=osrm build.sh``), stopped past ``max_gb``."""
    peers_dir = Path(peers.PEERS_DIR)
    env = dict(os.environ, OSRM_CH="0", ENGINES="osrm", PEERS_DIR=str(peers_dir))
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        ["./build.sh", name, str(pbf)], cwd=PEERS_KIT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    root, peak, killed = psutil.Process(proc.pid), 0, False
    while proc.poll() is None:
        peak = max(peak, _tree_rss(root))
        if peak > max_gb * 2**30:
            for p in root.children(recursive=True):
                p.kill()
            proc.kill()
            killed = True
            break
        time.sleep(0.5)
    output = proc.communicate()[0].decode(errors="replace")
    out: dict[str, Any] = {"wall_s": round(time.perf_counter() - t0, 1), "sampled_peak_rss_mb": round(peak / 2**20)}
    if killed:
        return {**out, "fits": False, "note": f"stopped past {max_gb} GB"}
    steps = {}
    for line in output.splitlines():
        found = re.search(r"(osrm-\w+).*?([\d.]+) ?s.*peak RSS (\d+) MiB", line)
        if found:
            steps[found.group(1)] = {"seconds": float(found.group(2)), "peak_rss_mb": int(found.group(3))}
    data = peers_dir / "regions" / name / "osrm"
    return {**out, "fits": proc.returncode == 0, "steps": steps, "data_mb": round(distinct_bytes(data) / 1e6, 1)}


# -- the run --------------------------------------------------------------------------------------


def measure(nodes: int, args: argparse.Namespace) -> dict[str, Any]:
    addresses = int(nodes * args.addresses_per_node)
    work = WORK / f"n{nodes}"
    work.mkdir(parents=True, exist_ok=True)
    pbf = WORK / f"country-{nodes}.osm.pbf"
    data_dir, log = work / "data", work / "import.log"
    entry: dict[str, Any] = {"nodes": nodes, "addresses": addresses, "generate_s": generate(nodes, addresses, pbf)}
    entry["load_average_at_start"] = round(os.getloadavg()[0], 1)  # the machine is shared: read times with it
    if not (args.reuse_import and log.exists() and _current(data_dir).exists()):
        shutil.rmtree(data_dir, ignore_errors=True)
        run_import(pbf, data_dir, log, args.profiles)
    entry["import"] = import_figures(data_dir, log)
    print(json.dumps(entry["import"]), flush=True)
    entry["serve"] = serve_and_measure(data_dir, args.queries, args.seed, args.route_profiles, args.cold_cache)
    print(json.dumps(entry["serve"]), flush=True)
    if args.replicate:
        entry["replicate"] = publish_and_pull(data_dir, work)
    if args.osrm:
        entry["osrm_mld"] = osrm_mld(pbf, f"country{nodes}", args.osrm_max_gb)
    return entry


def size_key(entry: dict[str, Any]) -> tuple[int, str]:
    """An entry of the results is one size imported with one set of profiles (runs before
    ``--profiles`` existed imported the car alone)."""
    return entry["nodes"], entry.get("profiles_arg") or "car"


def with_entry(sizes: list[dict[str, Any]], entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The results' entries with ``entry`` in place of an earlier run of the same size and profiles."""
    return sorted([*(e for e in sizes if size_key(e) != size_key(entry)), entry], key=size_key)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1000000,3000000,10000000", help="road-network sizes, comma-separated")
    parser.add_argument("--addresses-per-node", type=float, default=2.5)
    parser.add_argument("--profiles", default="car", help="travel profiles imported (meridian import --profiles)")
    parser.add_argument(
        "--route-profiles",
        default=None,
        help="profiles the passes route, comma-separated (default: every imported one)",
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--cold-cache",
        action="store_true",
        help="drop the dataset's cached pages before serving, as a node started after a reboot",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--reuse-import", action="store_true", help="keep an earlier run's import of a size")
    parser.add_argument(
        "--no-replicate",
        dest="replicate",
        action="store_false",
        help="skip publish and pull (each holds another copy of the dataset on disk)",
    )
    parser.add_argument("--osrm", action="store_true", help="OSRM MLD build of the same PBF (peers kit)")
    parser.add_argument("--osrm-max-gb", type=float, default=8.0)
    parser.add_argument("--osrm-only", action="store_true", help="add OSRM's build to a size measured before")
    args = parser.parse_args(argv)
    WORK.mkdir(parents=True, exist_ok=True)
    done = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"sizes": []}
    for nodes in (int(n) for n in args.nodes.split(",") if n):
        if args.osrm_only:
            entry = next(e for e in done["sizes"] if size_key(e) == (nodes, args.profiles))
            entry["osrm_mld"] = osrm_mld(WORK / f"country-{nodes}.osm.pbf", f"country{nodes}", args.osrm_max_gb)
        else:
            entry = measure(nodes, args)
            entry["profiles_arg"] = args.profiles
        done["sizes"] = with_entry(done["sizes"], entry)
        done["machine"] = {"cpus": os.cpu_count(), "memory_gb": round(psutil.virtual_memory().total / 2**30, 1)}
        RESULTS.write_text(json.dumps(done, indent=2) + "\n")
        print(json.dumps(entry, indent=2), flush=True)


if __name__ == "__main__":
    main()
