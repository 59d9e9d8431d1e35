"""Heavy functions end to end through the queue: gunicorn (2 workers) -> Redis -> a Celery worker.

For each sample region, on seeded random road nodes (independent points: no two requests alike):
- isochrone (10 and 20 min by default, ``--minutes``): first request (computed by a worker) and
  repeat (answered from the cache), next to Valhalla's /isochrone with the same contours on the
  same origins when the peers kit serves the region;
- static map 600x400 PNG, zoom 15: uncached (a new centre each time) and cached;
- geometry download (admin areas containing a point): uncached and cached.

Per origin the requests take turns (Meridian's isochrone, Valhalla's, the map, the geometry), so
the noise of a shared machine falls on all of them alike: compare the ratios of one run. The load
average at the start and the end of the run is kept with the results.

Usage: ``python -m bench.heavy [--n 40] [--regions monaco] [--minutes 10,20] [--start-peers]
[--data-dir DIR] [--out bench/results/heavy.json]``; prints a table and writes the JSON that
``bench.report`` turns into docs/benchmarks.md. Needs REDIS_URL (default redis://127.0.0.1:6379/0);
``--data-dir`` reuses imported samples (e.g. ``MERIDIAN_TEST_DATA_DIR``) instead of importing them.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from accounts.store import AccountStore
from bench import peers
from bench.http_client import Http
from bench.overhead import start_gunicorn, summary
from bench.peers import peers_region, start_peers
from bench.procfs import stat_fields
from bench.record import run_record
from config.settings import PROJECT_ROOT, Settings
from engine.dataset import DatasetRegistry
from engine.ingest.pipeline import import_pbf

RESULTS = PROJECT_ROOT / "bench" / "results"
VALHALLA = peers.VALHALLA


def start_worker(env: dict) -> subprocess.Popen:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "workers.main",
            "worker",
            "-Q",
            "isochrone,staticmap,geometry,default",
            "--concurrency",
            "2",
            "--loglevel",
            "WARNING",
            "-n",
            f"bench-{os.getpid()}@%h",
            "--without-gossip",
            "--without-mingle",
        ],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    from workers.celery_app import make_celery

    celery = make_celery(Settings.from_env(env))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not celery.control.ping(timeout=0.5):
        pass
    return proc


def stop(proc: subprocess.Popen, grace_s: float = 20.0) -> None:
    """Stop a server this benchmark started (in a session of its own): SIGTERM, then SIGKILL to its
    whole process group past ``grace_s``, so that no worker outlives the run and goes on taking
    tasks from the queues of the next one on the same Redis."""
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(grace_s)


def origins(registry: DatasetRegistry, region: str, n: int, seed: int = 7) -> list[tuple[float, float]]:
    router = registry.require(region).router
    comp = np.asarray(router.g.node_component)
    main = np.bincount(comp).argmax()
    nodes = np.flatnonzero(comp == main)
    pick = np.random.default_rng(seed).choice(nodes, size=n, replace=False)
    return [(round(float(router.node_lat[i]), 6), round(float(router.g.node_lng[i]), 6)) for i in pick]


def timed(client: Http, path: str, headers: dict) -> float:
    elapsed, status, body = client.request("GET", path, headers=headers)
    assert status == 200, (path, status, body[:200])
    return elapsed


def valhalla(client: Http, lat: float, lng: float, minutes: tuple[float, ...]) -> float | None:
    body = {
        "locations": [{"lat": lat, "lon": lng}],
        "costing": "auto",
        "contours": [{"time": m} for m in minutes],
        "polygons": True,
    }
    try:
        elapsed, status, _ = client.request("POST", "/isochrone", body=json.dumps(body).encode())
    except OSError:
        return None
    return elapsed if status == 200 else None


def bench_region(
    port: int, key: str, points: list[tuple[float, float]], with_valhalla: bool, minutes: tuple[float, ...]
) -> dict:
    """Per origin, interleaved: Meridian's first (queued) and repeated (cached) request of each
    heavy function, and Valhalla's isochrone, so that machine noise hits them alike."""
    h = {"X-API-Key": key}
    meridian, peer = Http("127.0.0.1", port), Http(*VALHALLA)
    out: dict[str, list[float]] = {
        k: [] for k in ("iso_first", "iso_cached", "valhalla", "map_first", "map_cached", "geom_first", "geom_cached")
    }
    for lat, lng in points:
        iso = f"/v1/isochrone?lat={lat}&lng={lng}&time={','.join(f'{m:g}' for m in minutes)}"
        out["iso_first"].append(timed(meridian, iso, h))
        out["iso_cached"].append(timed(meridian, iso, h))
        v = valhalla(peer, lat, lng, minutes) if with_valhalla else None
        if v is not None:
            out["valhalla"].append(v)
        smap = f"/v1/staticmaps?center={lat},{lng}&zoom=15&size=600x400"
        out["map_first"].append(timed(meridian, smap, h))
        out["map_cached"].append(timed(meridian, smap, h))
        geom = f"/v1/geoment?lat={lat}&lng={lng}"
        out["geom_first"].append(timed(meridian, geom, h))
        out["geom_cached"].append(timed(meridian, geom, h))
    rows = {k: summary(v) for k, v in out.items() if v}
    if "valhalla" in rows:
        rows["iso_over_valhalla_p50"] = round(rows["iso_first"]["p50_ms"] / rows["valhalla"]["p50_ms"], 3)
    return rows


def _tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of a process and its descendants so far (Linux /proc)."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = stat_fields(p)
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        todo.extend(int(c) for c in children)
    return total


def settle(port: int, procs: list[subprocess.Popen], timeout_s: float = 300.0) -> float:
    """Wait until the stack is ready and idle; returns the seconds waited. Each web process and each
    worker pool process warms in a background thread after it starts (engine/warmup.py: every
    service once on every dataset); measured during that, a request shares the CPU with it. Ready: ``/v1/health/ready`` answers 200 (the web
    processes are warm, a worker answers). Idle: the stack's processes use less than 5 % of a
    core over a second (the pool processes have warmed too)."""
    t0 = time.monotonic()
    client = Http("127.0.0.1", port)
    while time.monotonic() - t0 < timeout_s and client.request("GET", "/v1/health/ready")[1] != 200:
        time.sleep(0.5)
    before = sum(_tree_cpu_s(p.pid) for p in procs)
    while time.monotonic() - t0 < timeout_s:
        time.sleep(1.0)
        now = sum(_tree_cpu_s(p.pid) for p in procs)
        if now - before < 0.05:
            break
        before = now
    return round(time.monotonic() - t0, 1)


def warm(port: int, key: str, point: tuple[float, float]) -> None:
    """A few requests nobody times: a fresh worker process opens the datasets on its first tasks."""
    client = Http("127.0.0.1", port)
    lat, lng = point
    for i in range(4):
        for path in (
            f"/v1/isochrone?lat={lat}&lng={lng + i * 1e-4}&time=10",
            f"/v1/staticmaps?center={lat},{lng + i * 1e-4}&zoom=15&size=600x400",
        ):
            for _attempt in range(5):
                if client.request("GET", path, headers={"X-API-Key": key})[1] == 200:
                    break


LABELS = {
    "iso_first": "isochrone, via worker (uncached)",
    "iso_cached": "isochrone, cached",
    "valhalla": "Valhalla /isochrone (same origins)",
    "map_first": "static map 600x400, via worker",
    "map_cached": "static map, cached",
    "geom_first": "geometry download, via worker",
    "geom_cached": "geometry download, cached",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--regions", default="monaco")
    ap.add_argument("--minutes", default="10,20", help="isochrone contours, minutes")
    ap.add_argument("--data-dir", help="a DATA_DIR with the samples imported (default: import into a temporary one)")
    ap.add_argument("--out", default=str(RESULTS / "heavy.json"))
    ap.add_argument(
        "--start-peers",
        action="store_true",
        help="start each region's peers (../shared/peers serve.sh) before measuring it",
    )
    args = ap.parse_args()
    minutes = tuple(float(m) for m in args.minutes.split(","))
    tmp = Path(tempfile.mkdtemp(prefix="meridian-heavy-"))
    regions = args.regions.split(",")
    if args.data_dir:
        data_dir = Path(args.data_dir)
    else:
        data_dir = tmp / "data"
        for region in regions:
            import_pbf(PROJECT_ROOT / "data" / "samples" / f"{region}.osm.pbf", data_dir, region)
    registry = DatasetRegistry(data_dir)
    db = f"sqlite:///{tmp / 'bench.db'}"
    store = AccountStore(db)
    store.create_schema()
    key = store.create_key("bench-heavy", "pro").key
    env = {
        **os.environ,
        "DATA_DIR": str(data_dir),
        "DATABASE_URL": db,
        "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
        "SERVICE_NAME": f"meridianheavy{os.getpid()}",
        "PYTHONPATH": str(PROJECT_ROOT),
    }
    from tests.fixtures_live import free_port

    port = free_port()
    worker = start_worker(env)
    web = start_gunicorn(env, port)
    results = {}
    settled_s = settle(port, [web, worker])
    load_start = os.getloadavg()[0]
    try:
        for region in regions:
            if args.start_peers:
                start_peers(region)
            with_valhalla = peers_region() == region
            points = origins(registry, region, args.n + 1)
            warm(port, key, points[0])
            results[region] = bench_region(port, key, points[1:], with_valhalla, minutes)
    finally:
        for proc in (web, worker):
            stop(proc)
    doc = {
        **run_record("bench.heavy", sys.argv[1:], load_start),
        "settled_s": settled_s,
        "minutes": list(minutes),
        "n": args.n,
        "regions": results,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2))
    for region, rows in results.items():
        print(f"\n{region} (n={args.n}, over HTTP, one keep-alive http.client connection per server)")
        print(f"{'measure':<40}{'p50 ms':>10}{'p99 ms':>10}")
        for k, label in LABELS.items():
            if k in rows:
                print(f"{label:<40}{rows[k]['p50_ms']:>10.2f}{rows[k]['p99_ms']:>10.2f}")
        if "iso_over_valhalla_p50" in rows:
            print(f"isochrone p50 / Valhalla p50: {rows['iso_over_valhalla_p50']}")
    print(f"\nload average {doc['load_start']} -> {doc['load_end']} on {doc['cores']} cores; wrote {out}")


if __name__ == "__main__":
    main()
