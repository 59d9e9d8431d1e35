"""Cold start: from process start to the first answered route and isochrone, as a load balancer
sees it (it waits for ``/v1/health/ready`` = 200, then sends a route, then an isochrone).

gunicorn (2 workers, as the image runs it) and a Celery worker start together over the samples,
with their own redis-server, accounts database and ``NUMBA_CACHE_DIR``. Scenarios:

- ``image``: the cache made by the image's build step (``meridian warmup``, run here as the
  Dockerfile runs it, timed), then the servers started on it;
- ``bare``: an empty ``NUMBA_CACHE_DIR``;
- ``warm``: the cache left by the previous scenario's servers (a restart on the same node).

``--code DIR`` runs the servers from another checkout (e.g. the code before this change, with its
own ``.venv``); ``--cpu`` adds route latency with kernels built for ``NUMBA_CPU_NAME=generic``
against the host CPU. Prints a table and writes bench/results/coldstart.json (``--label`` keys it).

    python -m bench.coldstart --data-dir DIR [--scenarios image,bare,warm] [--code DIR --label before] [--cpu]

The image sets NUMBA_CPU_NAME=generic: run with it in the environment to measure as the image runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

from config.settings import PROJECT_ROOT

RESULTS = PROJECT_ROOT / "bench" / "results" / "coldstart.json"
ROUTE = {"origin": "60.1699,24.9384", "destination": "60.1841,24.9500"}  # Helsinki centre -> Töölö
ISOCHRONE = {"lat": "60.1699", "lng": "24.9384", "time": "5"}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_redis(workdir: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    proc = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL,
    )
    time.sleep(0.5)
    return proc, f"redis://127.0.0.1:{port}/0"


def _python(code: Path) -> str:
    venv = code / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def _stop(*procs: subprocess.Popen) -> None:
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
    for proc in procs:
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)


def _create_key(code: Path, db: str) -> str:
    """A key made by ``code``'s own ``meridian keys create``, so that the new accounts database is
    at that release's schema version (a newer one refuses to start an older release)."""
    env = dict(os.environ, DATABASE_URL=db, PYTHONPATH=str(code))
    create = ["keys", "create", "--account", "bench", "--plan", "pro", "--label", "coldstart", "--json"]
    done = subprocess.run(
        [_python(code), "-m", "cli.main", *create], cwd=code, env=env, check=True, capture_output=True, text=True
    )
    key: str = json.loads(done.stdout)["key"]
    return key


def image_build_step(code: Path, cache: Path) -> float:
    """``meridian warmup`` as the Dockerfile runs it; seconds."""
    t0 = time.perf_counter()
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(code), PYTHONDONTWRITEBYTECODE="1")
    subprocess.run([_python(code), "-m", "cli.main", "warmup"], cwd=code, env=env, check=True, capture_output=True)
    return round(time.perf_counter() - t0, 1)


def start_to_first_answers(code: Path, data_dir: Path, cache: Path, workdir: Path, timeout_s: float = 600.0) -> dict:
    """Start the servers; seconds from their start to ready, to the first route, to the first
    isochrone (each request sent once the previous answered, as a balancer would)."""
    redis_proc, redis_url = _start_redis(workdir)
    db = f"sqlite:///{workdir / 'accounts.db'}"
    key = _create_key(code, db)
    port = _free_port()
    env = dict(
        os.environ,
        DATA_DIR=str(data_dir),
        DATABASE_URL=db,
        REDIS_URL=redis_url,
        SERVICE_NAME="coldstart",
        NODE_ENV="test",
        PORT=str(port),
        WEB_CONCURRENCY="2",
        NUMBA_CACHE_DIR=str(cache),
        PYTHONPATH=str(code),
        PYTHONDONTWRITEBYTECODE="1",
    )
    py = _python(code)
    log = open(workdir / "servers.log", "ab")  # noqa: SIM115 - closed below
    t0 = time.perf_counter()
    web = subprocess.Popen(
        [py, "-m", "gunicorn", "-c", str(code / "config" / "gunicorn.py"), "app.wsgi:app"],
        cwd=code,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    worker = subprocess.Popen(
        [py, "-m", "celery", "-A", "workers.main", "worker", "-Q", "default,isochrone,staticmap,geometry,batch"]
        + ["--concurrency", "1", "--without-gossip", "--without-mingle", "-n", f"coldstart-{port}@%h"],
        cwd=code,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base, headers = f"http://127.0.0.1:{port}", {"X-API-Key": key}
    out: dict[str, Any] = {}
    try:
        deadline = t0 + timeout_s
        while time.perf_counter() < deadline:
            try:
                if requests.get(f"{base}/v1/health/ready", timeout=5).status_code == 200:
                    break
            except requests.RequestException:
                pass
            time.sleep(0.2)
        out["ready_s"] = round(time.perf_counter() - t0, 1)
        for name, path, params in (("route", "/v1/routing", ROUTE), ("isochrone", "/v1/isochrone", ISOCHRONE)):
            sent = time.perf_counter()
            resp = requests.get(f"{base}{path}", params=params, headers=headers, timeout=timeout_s)
            assert resp.status_code == 200, (path, resp.status_code, resp.text[:300])
            out[f"{name}_s"] = round(time.perf_counter() - t0, 1)
            out[f"{name}_request_s"] = round(time.perf_counter() - sent, 2)
    finally:
        _stop(web, worker)
        redis_proc.terminate()
        redis_proc.wait(10)
        log.close()
    return out


def route_latency(code: Path, data_dir: Path, cache: Path, cpu_name: str | None, n: int = 300) -> dict:
    """In-process route p50/mean (ms) on Helsinki with kernels for ``cpu_name`` (None: the host)."""
    script = f"""
import json, time, numpy as np
from engine.dataset import DatasetRegistry
from engine.services import routing
from engine.warmup import WarmState, warm_registry
reg = DatasetRegistry({str(data_dir)!r}); warm_registry(reg, WarmState())
g = reg.require("helsinki").router
rng = np.random.default_rng(1); idx = rng.integers(0, len(g.node_lat), size=({n}, 2))
times = []
for a, b in idx:
    p = routing.RoutingParams((float(g.node_lat[a]), float(g.node_lng[a])), (float(g.node_lat[b]), float(g.node_lng[b])))
    t = time.perf_counter()
    try:
        routing.run(reg, p)
    except Exception:
        continue
    times.append((time.perf_counter() - t) * 1000)
print(json.dumps({{"p50_ms": round(float(np.median(times)), 3), "mean_ms": round(float(np.mean(times)), 3), "n": len(times)}}))
"""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(code))
    env.pop("NUMBA_CPU_NAME", None)
    if cpu_name:
        env["NUMBA_CPU_NAME"] = cpu_name
    done = subprocess.run([_python(code), "-c", script], cwd=code, env=env, check=True, capture_output=True, text=True)
    result: dict = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, required=True, help="a DATA_DIR with the samples imported")
    parser.add_argument("--scenarios", default="image,bare,warm")
    parser.add_argument("--code", type=Path, default=PROJECT_ROOT, help="the checkout the servers run from")
    parser.add_argument("--label", default="after")
    parser.add_argument("--cpu", action="store_true", help="also route latency: generic vs host kernels")
    args = parser.parse_args()
    results: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    mine: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="coldstart-") as tmp:
        root = Path(tmp)
        cache = root / "numba"
        for scenario in args.scenarios.split(","):
            work = root / scenario
            work.mkdir()
            row: dict[str, Any] = {}
            if scenario in ("image", "bare"):
                shutil.rmtree(cache, ignore_errors=True)
                cache.mkdir()
            if scenario == "image":
                row["build_step_s"] = image_build_step(PROJECT_ROOT, cache)
            row.update(start_to_first_answers(args.code.resolve(), args.data_dir.resolve(), cache, work))
            mine[scenario] = row
            print(f"{args.label:<8} {scenario:<6} " + "  ".join(f"{k}={v}" for k, v in row.items()), flush=True)
        if args.cpu:
            for name, cpu in (("host", None), ("generic", "generic")):
                cpu_cache = root / f"numba-{name}"
                mine[f"route_latency_{name}"] = route_latency(PROJECT_ROOT, args.data_dir.resolve(), cpu_cache, cpu)
                print(f"route latency, {name} kernels: {mine[f'route_latency_{name}']}", flush=True)
    results.setdefault(args.label, {}).update(mine)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
