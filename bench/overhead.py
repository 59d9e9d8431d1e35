"""Platform overheads: what the gateway and access control add to a request.

1. Auth + quota per request, in process with warm caches (``AccessControl.check``: key cache hit,
   one Redis Lua round trip) — target p50 < 0.5 ms.
2. Gateway overhead over HTTP: ``/v1/geocoding`` minus core ``cmd=geocoding`` on the same
   gunicorn (in-process mode), and through a second gunicorn that forwards to the first
   (HTTP mode, ``SERVICE_BASE_URL``).

Usage: ``python -m bench.overhead [--n 500] [--data-dir DIR]`` (imports the samples into a temporary
DATA_DIR when none is given). Prints a table and writes bench/results/overhead.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

from accounts.access import AccessControl
from accounts.quota import QuotaCounter
from accounts.store import AccountStore
from app.runtime import redis_client
from config.settings import PROJECT_ROOT
from engine.ingest.pipeline import import_pbf

RESULTS = PROJECT_ROOT / "bench" / "results"
QUERY = "Mannerheimintie 5, Helsinki"


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def summary(samples_s: list[float]) -> dict:
    ms = [s * 1000 for s in samples_s]
    return {
        "n": len(ms),
        "p50_ms": round(pct(ms, 50), 3),
        "p99_ms": round(pct(ms, 99), 3),
        "mean_ms": round(statistics.fmean(ms), 3),
    }


def bench_access(store: AccountStore, redis_url: str, n: int) -> dict:
    key = store.create_key("bench", "pro").key
    access = AccessControl(store, QuotaCounter(redis_client(redis_url), "meridianbench"), cache_ttl_s=60)
    access.check(key, "geocoding")  # warm the key cache and the script cache
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        access.check(key, "geocoding")
        samples.append(time.perf_counter() - t0)
    auth_only = []
    for _ in range(n):
        t0 = time.perf_counter()
        access.authorize(access.authenticate(key), "geocoding")
        auth_only.append(time.perf_counter() - t0)
    return {"auth_plus_quota": summary(samples), "auth_only": summary(auth_only)}


def start_gunicorn(env: dict, port: int, workers: int = 2) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", str(PROJECT_ROOT / "config" / "gunicorn.py"), "app.wsgi:app"],
        cwd=PROJECT_ROOT,
        env={**env, "PORT": str(port), "WEB_CONCURRENCY": str(workers)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/v1/health/live", timeout=1).ok:
                return proc
        except requests.RequestException:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("gunicorn did not start")


def interleaved_gets(targets: list[tuple[str, dict]], n: int) -> list[list[float]]:
    """Round-robin over the targets (one keep-alive session each), so that machine noise hits
    every target alike and the differences stay meaningful."""
    sessions = [requests.Session() for _ in targets]
    out: list[list[float]] = [[] for _ in targets]
    for i in range(n + 20):
        for j, ((url, headers), s) in enumerate(zip(targets, sessions, strict=True)):
            t0 = time.perf_counter()
            r = s.get(url, headers=headers, timeout=10)
            if i >= 20:
                out[j].append(time.perf_counter() - t0)
            assert r.status_code == 200, r.text[:200]
    for s in sessions:
        s.close()
    return out


def bench_http(env: dict, key: str, n: int) -> dict:
    from tests.fixtures_live import free_port

    core_port, gw_port = free_port(), free_port()
    core = start_gunicorn(env, core_port)
    gateway = start_gunicorn(
        {
            **env,
            "SERVICE_BASE_URL": f"http://127.0.0.1:{core_port}/services/v2/json",
            "SERVICE_SUGGEST_URL": f"http://127.0.0.1:{core_port}/suggest/json",
            "SERVICE_API_KEY": key,
        },
        gw_port,
    )
    try:
        q = requests.utils.quote(QUERY)
        core_t, gw_in, gw_http = interleaved_gets(
            [
                (
                    f"http://127.0.0.1:{core_port}/services/json?cmd=geocoding&addr={q}",
                    {"Authorization": f"Bearer {key}"},
                ),
                (f"http://127.0.0.1:{core_port}/v1/geocoding?query={q}", {"X-API-Key": key}),
                (f"http://127.0.0.1:{gw_port}/v1/geocoding?query={q}", {"X-API-Key": key}),
            ],
            n,
        )
    finally:
        for proc in (gateway, core):
            proc.terminate()
            proc.wait(10)
    core_s, in_s, http_s = summary(core_t), summary(gw_in), summary(gw_http)
    return {
        "core_geocoding": core_s,
        "gateway_in_process": in_s,
        "gateway_http_mode": http_s,
        "overhead_in_process_ms": {k: round(in_s[k] - core_s[k], 3) for k in ("p50_ms", "p99_ms")},
        "overhead_http_mode_ms": {k: round(http_s[k] - core_s[k], 3) for k in ("p50_ms", "p99_ms")},
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--data-dir", type=Path)
    args = ap.parse_args()
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    tmp = Path(tempfile.mkdtemp(prefix="meridian-bench-"))
    data_dir = args.data_dir or tmp / "data"
    for region in ("monaco", "helsinki"):
        import_pbf(PROJECT_ROOT / "data" / "samples" / f"{region}.osm.pbf", data_dir, region)
    db = f"sqlite:///{tmp / 'bench.db'}"
    store = AccountStore(db)
    store.create_schema()
    env = {
        **os.environ,
        "DATA_DIR": str(data_dir),
        "DATABASE_URL": db,
        "REDIS_URL": redis_url,
        "SERVICE_NAME": "meridianbench",
        "PYTHONPATH": str(PROJECT_ROOT),
    }
    results = {
        "access": bench_access(store, redis_url, args.n),
        "http": bench_http(env, store.create_key("bench-http", "pro").key, args.n),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "overhead.json").write_text(json.dumps(results, indent=2))
    a, h = results["access"], results["http"]
    print(f"{'measure':<44}{'p50 ms':>10}{'p99 ms':>10}")
    rows = [
        ("auth + quota (in process, warm caches)", a["auth_plus_quota"]),
        ("auth only (cached key, no Redis)", a["auth_only"]),
        ("core cmd=geocoding over HTTP", h["core_geocoding"]),
        ("/v1/geocoding, in-process backend", h["gateway_in_process"]),
        ("/v1/geocoding, HTTP-mode gateway -> core", h["gateway_http_mode"]),
    ]
    for label, s in rows:
        print(f"{label:<44}{s['p50_ms']:>10.3f}{s['p99_ms']:>10.3f}")
    for label, key in (
        ("gateway overhead, in-process", "overhead_in_process_ms"),
        ("gateway overhead, HTTP mode", "overhead_http_mode_ms"),
    ):
        print(f"{label:<44}{h[key]['p50_ms']:>10.3f}{h[key]['p99_ms']:>10.3f}")
    print(f"wrote {RESULTS / 'overhead.json'}")


if __name__ == "__main__":
    main()
