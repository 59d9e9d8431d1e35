"""Meridian under a sustained, realistic mix with faults on a schedule (issue 21).

    python -m bench.load --data-dir DIR [--hold 300] [--out bench/results/load.json]

1. Starts a full deployment of its own (``bench/load_deploy.py``): gunicorn web, the Procfile's
   Celery workers, Redis with its append-only file, PostgreSQL from ``initdb`` on a free port.
2. Finds the saturation throughput of the mix (``bench/load_mix.py``, locust users driven from
   Python, no wait between requests, more users each step) and holds 80 % of it for ``--hold``
   seconds (locust's ``constant_throughput`` per user).
3. During the hold, at fixed fractions of it: SIGKILL a Celery pool process, SIGKILL a gunicorn
   worker, restart Redis (shutdown, start, data from its append-only file), stop PostgreSQL for
   20 s, flood the static-map queue with ten times its capacity of async jobs.
4. Polls every accepted job until it settles, then prints one table (per function: requests,
   p50/p95/p99 of the 2xx, statuses, 5xx, clean 503s with Retry-After; per fault: failed
   requests and recovery time; jobs lost or duplicated; quota exactness of two ``free`` keys)
   and writes the JSON with the per-second series (``python -m bench.report`` draws it).
"""

from __future__ import annotations

from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402 (after gevent's patching, as locust requires)
import json  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import gevent  # noqa: E402
import requests  # noqa: E402
from gevent.pool import Pool  # noqa: E402
from locust import constant, constant_throughput  # noqa: E402
from locust.env import Environment  # noqa: E402

from bench import load_mix, load_report  # noqa: E402
from bench.load_deploy import Deployment  # noqa: E402
from bench.load_mix import RECORDER, MixUser, OverUser, UnderUser  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
HOLD_FRACTION = 0.8
SATURATION_STEPS = (4, 8, 16, 32)
HOLD_USERS = 64  # enough users for the target rate even when answers slow down under faults
PG_STOP_S = 20.0
# the deployment's back-pressure bound for static maps: about what its one map worker finishes
# within TASK_WAIT_TIMEOUT; the flood sends ten times that as async jobs
MAP_QUEUE_DEPTH = 20
FLOOD_FACTOR = 10
FREE_PLAN_PER_MINUTE = 60
WARMUP_S = 15.0
QUOTA_USERS = OverUser.fixed_count + UnderUser.fixed_count
FINAL_POLL_S = 180.0


def mix_rows(since: float, until: float) -> list[load_report.Row]:
    with RECORDER.lock:
        return [r for r in RECORDER.rows if since <= r[0] < until and not r[1].startswith(("quota_", "flood"))]


def find_saturation(runner: Any, step_s: float) -> dict[str, Any]:
    """Closed loop (no wait) with more users each step; the best answered rate is saturation."""
    MixUser.wait_time = constant(0)
    runner.start(SATURATION_STEPS[1] + QUOTA_USERS, spawn_rate=100)
    gevent.sleep(WARMUP_S)  # indexes opened and caches warm in every process before measuring
    steps = []
    for users in SATURATION_STEPS:
        runner.start(users + QUOTA_USERS, spawn_rate=100)
        gevent.sleep(2.0)  # let the step settle before measuring
        t0 = time.time() - RECORDER.t0
        gevent.sleep(step_s)
        rows = mix_rows(t0, t0 + step_s)
        answered = [r for r in rows if 0 < r[3] < 500]
        ok_ms = [r[2] for r in rows if 200 <= r[3] < 300]
        steps.append(
            {
                "users": users,
                "rps": round(len(answered) / step_s, 1),
                "p95_ms": load_report.percentile(ok_ms, 95),
                "failed": sum(1 for r in rows if load_report.failed(r)),
            }
        )
        print(f"  saturation step {steps[-1]}", flush=True)
    best = max(steps, key=lambda s: s["rps"] or 0.0)
    return {"rps": best["rps"], "users": best["users"], "steps": steps}


def flood(base_url: str, key: str, count: int) -> dict[str, Any]:
    """``count`` distinct async static maps as fast as 20 connections send them."""
    statuses: dict[str, int] = {}

    def one(_: int) -> None:
        lat, lng = random.choice(load_mix.PLACES["helsinki"])
        lat, lng = lat + random.uniform(-0.002, 0.002), lng + random.uniform(-0.004, 0.004)
        url = f"{base_url}/v1/staticmaps?center={lat:.6f},{lng:.6f}&zoom=14&size=200x200&async=true"
        t0, sent = time.perf_counter(), time.time() - RECORDER.t0
        try:
            resp = requests.get(url, headers={"X-API-Key": key}, timeout=30)
            status, retry_after = resp.status_code, bool(resp.headers.get("Retry-After"))
            if status == 202:
                RECORDER.accepted(resp.json()["job_id"], "flood")
        except requests.RequestException:
            status, retry_after = 0, False
        with RECORDER.lock:
            RECORDER.rows.append((sent, "flood", (time.perf_counter() - t0) * 1000, status, retry_after))
        statuses[str(status)] = statuses.get(str(status), 0) + 1

    Pool(20).map(one, range(count))
    return {"sent": count, "statuses": statuses}


def fault_schedule(
    deploy: Deployment, keys: dict[str, str], hold_s: float
) -> list[tuple[float, str, Callable[[], str]]]:
    def kill_celery() -> str:
        return f"SIGKILL pool process {deploy.kill_child('worker')} of `worker`"

    def kill_gunicorn() -> str:
        return f"SIGKILL gunicorn worker {deploy.kill_child('web')}"

    def restart_redis() -> str:
        t0 = time.monotonic()
        deploy.restart_redis()
        return f"redis down {time.monotonic() - t0:.1f} s (SHUTDOWN, start from its AOF)"

    def stop_postgres() -> str:
        pause = min(PG_STOP_S, hold_s * 0.15)
        deploy.stop_postgres()
        gevent.sleep(pause)
        deploy.start_postgres()
        return f"PostgreSQL stopped {pause:g} s"

    def flood_maps() -> str:
        result = flood(deploy.base_url, keys["load"], MAP_QUEUE_DEPTH * FLOOD_FACTOR)
        return f"{result['sent']} async static maps: {result['statuses']}"

    return [
        (0.10, "SIGKILL Celery worker", kill_celery),
        (0.22, "SIGKILL gunicorn worker", kill_gunicorn),
        (0.36, "restart Redis", restart_redis),
        (0.52, "stop PostgreSQL", stop_postgres),
        (0.74, "flood static-map queue", flood_maps),
    ]


def run_faults(schedule: list[tuple[float, str, Callable[[], str]]], hold_start: float, hold_s: float) -> list[dict]:
    done = []
    for fraction, name, action in schedule:
        at = hold_start + fraction * hold_s
        gevent.sleep(max(0.0, at - (time.time() - RECORDER.t0)))
        started = time.time() - RECORDER.t0
        try:
            note = action()
        except Exception as exc:  # a fault that could not be injected is reported, not fatal
            note = f"could not inject: {type(exc).__name__}: {exc}"
        print(f"  fault at {started:.0f} s: {name}: {note}", flush=True)
        done.append({"fault": name, "at": started, "ended": time.time() - RECORDER.t0, "note": note})
    return done


def final_poll(base_url: str, key: str, budget_s: float) -> None:
    """Poll every job still open until it settles or the budget is spent."""
    deadline = time.monotonic() + budget_s
    while time.monotonic() < deadline:
        with RECORDER.lock:
            open_jobs = [j for j, v in RECORDER.jobs.items() if v["status"] not in ("done", "failed")]
        if not open_jobs:
            return
        for job_id in open_jobs:
            try:
                resp = requests.get(f"{base_url}/v1/jobs/{job_id}", headers={"X-API-Key": key}, timeout=10)
            except requests.RequestException:
                continue
            if resp.status_code == 200 and resp.json().get("status") in ("done", "failed"):
                RECORDER.settled(job_id, resp.json())
        gevent.sleep(1.0)


def redis_outages(faults: list[dict]) -> list[tuple[float, float]]:
    """When Redis was down (the restart fault, with the requests in flight at its end)."""
    return [(f["at"], f["ended"] + load_report.IN_FLIGHT_S) for f in faults if f["fault"] == "restart Redis"]


def analyse(sat: dict, hold_start: float, hold_end: float, faults: list[dict], target: float) -> dict[str, Any]:
    with RECORDER.lock:
        rows = list(RECORDER.rows)
        jobs = {k: dict(v) for k, v in RECORDER.jobs.items()}
    hold_rows = [r for r in rows if hold_start <= r[0] < hold_end]
    series = load_report.timeseries(hold_rows, hold_start, hold_end)
    mix = [r for r in hold_rows if not r[1].startswith(("quota_", "flood"))]
    fault_rows = load_report.fault_table(
        series,
        [
            {
                "fault": f["fault"],
                "at_s": round(f["at"] - hold_start, 1),
                "duration_s": round(f["ended"] - f["at"], 1),
                "note": f["note"],
            }
            for f in faults
        ],
    )
    return {
        "saturation": sat,
        "hold": {
            "seconds": round(hold_end - hold_start, 1),
            "target_rps": round(target, 1),
            "measured_rps": round(len(mix) / max(1e-9, hold_end - hold_start), 1),
        },
        "functions": load_report.function_table(hold_rows),
        "faults": fault_rows,
        "jobs": load_report.job_audit(jobs),
        "quota": {
            name: load_report.quota_exactness(rows, f"quota_{name}", FREE_PLAN_PER_MINUTE, redis_outages(faults))
            for name in ("over", "under")
        },
        "series": series,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True, help="DATA_DIR with the Helsinki and Monaco datasets")
    ap.add_argument("--hold", type=float, default=300.0, help="seconds at 80 %% of saturation (default 300)")
    ap.add_argument("--step", type=float, default=15.0, help="seconds per saturation step")
    ap.add_argument("--out", type=Path, default=RESULTS / "load.json")
    args = ap.parse_args()

    deploy = Deployment(
        args.data_dir,
        env_extra={"QUEUE_MAX_DEPTH_STATICMAP": str(MAP_QUEUE_DEPTH), "LOG_FORMAT": "json"},
    )
    print(f"starting the deployment in {deploy.root}", flush=True)
    keys = deploy.start()
    load_mix.KEYS.update(keys)
    env = Environment(user_classes=[MixUser, OverUser, UnderUser], host=deploy.base_url)
    env.events.request.add_listener(RECORDER.on_request)
    runner = env.create_local_runner()
    try:
        print("finding saturation", flush=True)
        sat = find_saturation(runner, args.step)
        target = HOLD_FRACTION * sat["rps"]
        MixUser.wait_time = constant_throughput(target / HOLD_USERS)
        runner.start(HOLD_USERS + QUOTA_USERS, spawn_rate=100)
        gevent.sleep(3.0)
        hold_start = time.time() - RECORDER.t0
        print(f"holding {target:.1f} req/s for {args.hold:g} s", flush=True)
        faults = run_faults(fault_schedule(deploy, keys, args.hold), hold_start, args.hold)
        gevent.sleep(max(0.0, hold_start + args.hold - (time.time() - RECORDER.t0)))
        hold_end = time.time() - RECORDER.t0
        runner.stop()
        print("polling every accepted job until it settles", flush=True)
        final_poll(deploy.base_url, keys["load"], FINAL_POLL_S)
        alive = {name: proc.poll() is None for name, proc in deploy.procs.items()}
    finally:
        runner.quit()
        deploy.stop()
    doc = analyse(sat, hold_start, hold_end, faults, target)
    doc["processes_alive_at_end"] = alive
    doc["command"] = f"python -m bench.load --data-dir DIR --hold {args.hold:g} --step {args.step:g}"
    doc["machine"] = {"cpus": __import__("os").cpu_count(), "python": platform.python_version()}
    doc["deployment"] = {
        "web": "gunicorn, WEB_CONCURRENCY=2 (gthread, 4 threads)",
        "workers": "the Procfile's worker (default,batch,geometry x2), mapworker x1, isoworker x1",
        "redis": "appendonly yes, appendfsync everysec",
        "postgres": "initdb, own port",
        "queue_max_depth_staticmap": MAP_QUEUE_DEPTH,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1))
    print(load_report.format_table(doc))
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
