"""Heavy functions end to end through the queue: gunicorn (2 workers) -> Redis -> a Celery worker.

For each sample region, on seeded random road nodes:
- isochrone 5/10/15 min: first request (computed by a worker) and repeat (answered from the cache),
  next to Valhalla's /isochrone over HTTP on the same origins when the peers kit serves the region;
- static map 600x400 PNG: uncached (a new centre each time) and cached;
- geometry download (admin areas containing a point): uncached and cached.

Usage: ``python -m bench.heavy [--n 30] [--regions monaco,helsinki] [--start-peers]``; prints a table and writes
bench/results/heavy.json. Needs REDIS_URL (default redis://127.0.0.1:6379/0).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from accounts.store import AccountStore
from bench.http_client import Http
from bench.overhead import start_gunicorn, summary
from bench.routing import peers_region, start_peers
from config.settings import PROJECT_ROOT, Settings
from engine.dataset import DatasetRegistry
from engine.ingest.pipeline import import_pbf

RESULTS = PROJECT_ROOT / "bench" / "results"
VALHALLA = ("127.0.0.1", 8002)


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


def valhalla(client: Http, lat: float, lng: float) -> float | None:
    body = {
        "locations": [{"lat": lat, "lon": lng}],
        "costing": "auto",
        "contours": [{"time": 5}, {"time": 10}, {"time": 15}],
        "polygons": True,
    }
    try:
        elapsed, status, _ = client.request("POST", "/isochrone", body=json.dumps(body).encode())
    except OSError:
        return None
    return elapsed if status == 200 else None


def bench_region(port: int, key: str, points: list[tuple[float, float]], with_valhalla: bool) -> dict:
    """Per origin, interleaved: Meridian's first (queued) and repeated (cached) request of each
    heavy function, and Valhalla's isochrone, so that machine noise hits them alike."""
    h = {"X-API-Key": key}
    meridian, peer = Http("127.0.0.1", port), Http(*VALHALLA)
    out: dict[str, list[float]] = {
        k: [] for k in ("iso_first", "iso_cached", "valhalla", "map_first", "map_cached", "geom_first", "geom_cached")
    }
    for lat, lng in points:
        iso = f"/v1/isochrone?lat={lat}&lng={lng}&time=5,10,15"
        out["iso_first"].append(timed(meridian, iso, h))
        out["iso_cached"].append(timed(meridian, iso, h))
        v = valhalla(peer, lat, lng) if with_valhalla else None
        if v is not None:
            out["valhalla"].append(v)
        smap = f"/v1/staticmaps?center={lat},{lng}&zoom=15&size=600x400"
        out["map_first"].append(timed(meridian, smap, h))
        out["map_cached"].append(timed(meridian, smap, h))
        geom = f"/v1/geoment?lat={lat}&lng={lng}"
        out["geom_first"].append(timed(meridian, geom, h))
        out["geom_cached"].append(timed(meridian, geom, h))
    return {k: summary(v) for k, v in out.items() if v}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--regions", default="monaco,helsinki")
    ap.add_argument(
        "--start-peers",
        action="store_true",
        help="start each region's peers (../shared/peers serve.sh) before measuring it",
    )
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="meridian-heavy-"))
    data_dir = tmp / "data"
    regions = args.regions.split(",")
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
    try:
        for region in regions:
            if args.start_peers:
                start_peers(region)
            with_valhalla = peers_region() == region
            results[region] = bench_region(port, key, origins(registry, region, args.n), with_valhalla)
    finally:
        for proc in (web, worker):
            proc.terminate()
            proc.wait(20)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "heavy.json").write_text(json.dumps(results, indent=2))
    labels = {
        "iso_first": "isochrone 5/10/15 min, via worker",
        "iso_cached": "isochrone, cached",
        "valhalla": "Valhalla /isochrone (same origins)",
        "map_first": "static map 600x400, via worker",
        "map_cached": "static map, cached",
        "geom_first": "geometry download, via worker",
        "geom_cached": "geometry download, cached",
    }
    for region, rows in results.items():
        print(f"\n{region} (n={args.n}, over HTTP, one keep-alive http.client connection per server)")
        print(f"{'measure':<40}{'p50 ms':>10}{'p99 ms':>10}")
        for k, label in labels.items():
            if k in rows:
                print(f"{label:<40}{rows[k]['p50_ms']:>10.2f}{rows[k]['p99_ms']:>10.2f}")
    print(f"\nwrote {RESULTS / 'heavy.json'}")


if __name__ == "__main__":
    main()
