"""Batch geocoding benchmark: addresses per second through the whole job path.

POST /v1/geocoding/batch (in-process Flask app, real Redis) -> chunks of 50 on queue ``batch`` ->
one Celery worker with 2 pool processes ("two workers") -> results in Redis -> GET /v1/jobs/{id}
until done (polled every 20 ms). The time is from the POST to the first "done" answer, results
included. Addresses are the real queries of bench/data/{helsinki,monaco}-geocode.json, cycled.
A warm-up batch (datasets opened in each pool process) is excluded. Beside it: the same addresses
geocoded in this one process, sequentially (the engine's own rate, no queue).

Target (issue 7): >= 500 addresses/s with two workers. Shared 2-core machine: wall-clock numbers.

Usage:
    .venv/bin/python bench/batch.py [--sizes 100,500,1000] [--repeat 3] [--concurrency 2]
Writes bench/results/batch.json. Redis: REDIS_URL's server, database 13, service name
``meridianbench`` (flushed at start). Data: DATA_DIR/MERIDIAN_TEST_DATA_DIR if set (samples
imported there, idempotent), else a temporary directory.
"""

# ruff: noqa: E402  (the path fix below must run before the imports)
from __future__ import annotations

import sys
from pathlib import Path

# bench/ holds a platform.py that would shadow the standard library's module: drop the script's
# directory from the path before anything imports `platform` (uuid, redis, ...).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import tempfile
import time
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from config.settings import Settings  # noqa: E402
from engine.ingest.pipeline import import_pbf  # noqa: E402

SAMPLES = ROOT / "data" / "samples"
SERVICE = "meridianbench"
BENCH_DB = 13


def addresses(n: int) -> list[str]:
    pool = []
    for region in ("helsinki", "monaco"):
        pool += [q["query"] for q in json.loads((ROOT / "bench" / "data" / f"{region}-geocode.json").read_text())]
    return [pool[i % len(pool)] for i in range(n)]


def data_dir() -> Path:
    reuse = os.environ.get("DATA_DIR") or os.environ.get("MERIDIAN_TEST_DATA_DIR")
    root = Path(reuse) if reuse else Path(tempfile.mkdtemp(prefix="meridian-bench-"))
    for region in ("monaco", "helsinki"):
        import_pbf(SAMPLES / f"{region}.osm.pbf", root, region)
    return root


def start_worker(env: dict, concurrency: int, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "workers.main",
            "worker",
            "-Q",
            "batch",
            "--concurrency",
            str(concurrency),
            "--loglevel",
            "WARNING",
            "-n",
            f"bench-{os.getpid()}@%h",
            "--without-gossip",
            "--without-mingle",
        ],
        cwd=ROOT,
        env=env,
        stdout=open(log, "ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def run_job(client, key: str, items: list[str]) -> tuple[float, dict]:
    headers = {"X-API-Key": key}
    t0 = time.perf_counter()
    resp = client.post("/v1/geocoding/batch", json={"addresses": items}, headers=headers)
    assert resp.status_code == 202, resp.get_data(as_text=True)
    url = resp.get_json()["status_url"]
    while True:
        body = client.get(url, headers=headers).get_json()
        if body["status"] in ("done", "failed"):
            break
        time.sleep(0.02)
    elapsed = time.perf_counter() - t0
    assert body["status"] == "done", body
    assert [r["query"] for r in body["results"]] == items
    return elapsed, body


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,500,1000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    base = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    parts = urlsplit(base)
    redis_url = urlunsplit((parts.scheme, parts.netloc, f"/{BENCH_DB}", "", ""))
    redis.Redis.from_url(redis_url).flushdb()
    ddir = data_dir()
    tmp = Path(tempfile.mkdtemp(prefix="meridian-bench-batch-"))
    env = dict(
        os.environ,
        DATA_DIR=str(ddir),
        DATABASE_URL=f"sqlite:///{tmp / 'accounts.db'}",
        REDIS_URL=redis_url,
        SERVICE_NAME=SERVICE,
        PYTHONPATH=str(ROOT),
        NODE_ENV="test",
    )
    settings = Settings.from_env(env)

    from accounts.store import AccountStore
    from app import create_app

    store = AccountStore(settings.database_url)
    store.create_schema()
    store.seed_plans()
    key = store.create_key("bench", "pro").key
    import logging

    logging.disable(logging.INFO)
    client = create_app(settings).test_client()

    worker = start_worker(env, args.concurrency, tmp / "worker.log")
    rows = []
    try:
        from workers.celery_app import make_celery

        celery = make_celery(settings)
        deadline = time.monotonic() + 60
        while not celery.control.ping(timeout=0.5):
            if worker.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker did not start (see {tmp / 'worker.log'})")
        run_job(client, key, addresses(200))  # warm-up: each pool process opens the datasets

        # The engine alone, sequentially in this process (reference).
        from engine.dataset import DatasetRegistry
        from engine.services import geocoding

        registry = DatasetRegistry(ddir)
        items = addresses(500)
        geocoding.run(registry, geocoding.GeocodeParams(query=items[0], limit=1))
        t0 = time.perf_counter()
        for q in items:
            geocoding.run(registry, geocoding.GeocodeParams(query=q, limit=1))
        inline = len(items) / (time.perf_counter() - t0)

        for size in sizes:
            times = []
            for _ in range(args.repeat):
                elapsed, body = run_job(client, key, addresses(size))
                times.append(elapsed)
            found = sum(1 for r in body["results"] if r["candidates"])
            med = statistics.median(times)
            rows.append(
                {
                    "addresses": size,
                    "runs": len(times),
                    "median_s": round(med, 3),
                    "best_s": round(min(times), 3),
                    "addresses_per_s": round(size / med, 1),
                    "best_addresses_per_s": round(size / min(times), 1),
                    "found": found,
                }
            )
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)

    print(
        f"\nBatch geocoding, 1 worker x {args.concurrency} pool processes, chunks of 50 "
        f"(engine alone, 1 process: {inline:.0f} addresses/s)"
    )
    print(
        f"{'addresses':>10} {'runs':>5} {'median s':>9} {'best s':>7} {'addr/s (median)':>16} "
        f"{'addr/s (best)':>14} {'found':>6}"
    )
    for r in rows:
        print(
            f"{r['addresses']:>10} {r['runs']:>5} {r['median_s']:>9.3f} {r['best_s']:>7.3f} "
            f"{r['addresses_per_s']:>16.1f} {r['best_addresses_per_s']:>14.1f} {r['found']:>6}"
        )
    top = max(rows, key=lambda r: r["addresses"])
    print(
        f"target >= 500 addresses/s: {'met' if top['addresses_per_s'] >= 500 else 'NOT met'} "
        f"({top['addresses_per_s']:.0f}/s on {top['addresses']} addresses)"
    )
    out = ROOT / "bench" / "results" / "batch.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "benchmark": "batch geocoding through the queue",
                "worker_concurrency": args.concurrency,
                "chunk": 50,
                "engine_inline_addresses_per_s": round(inline, 1),
                "rows": rows,
                "target_addresses_per_s": 500,
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
            indent=1,
        )
    )
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
