"""bench.load's pieces without a load run: the numbers from request rows (table, series,
recovery, quota windows, job audit), the Procfile reading and the locust users' import."""

from __future__ import annotations

from bench import load_report as lr
from bench.load_deploy import procfile


def rows_at(t0: float, n: int, name: str = "geocoding", status: int = 200, ms: float = 10.0, ra: bool = False):
    return [(t0 + i / n, name, ms + i, status, ra) for i in range(n)]


def test_function_table_counts_statuses_and_percentiles_of_2xx_only():
    rows = rows_at(0, 100) + rows_at(1, 10, status=503, ms=5000, ra=True) + rows_at(2, 2, status=500)
    (row,) = lr.function_table(rows)
    assert row["requests"] == 112 and row["status"] == {"200": 100, "500": 2, "503": 10}
    assert (row["p50_ms"], row["p99_ms"]) == (59.0, 108.0)  # the 503s' 5 s do not count
    assert (row["5xx"], row["clean_503"], row["no_answer"]) == (12, 10, 0)


def test_recovery_is_time_to_the_first_clean_run_after_the_last_failure():
    rows = rows_at(0, 50) + rows_at(10, 5, status=0) + rows_at(12, 5, status=502) + rows_at(13, 50)
    rows += rows_at(14, 50) + rows_at(15, 50) + rows_at(16, 50)
    series = lr.timeseries(rows, 0, 20)
    assert series[10]["failed"] == 5 and series[13]["failed"] == 0
    assert lr.recovery(series, 9.0, 20.0) == {"failed": 10, "clean_503": 0, "recovery_s": 4.0}  # clean from 13 s
    assert lr.recovery(series, 0.0, 9.0) == {"failed": 0, "clean_503": 0, "recovery_s": 0.0}
    assert lr.recovery(series, 9.0, 20.0)["failed"] == sum(s["failed"] for s in series)


def test_a_clean_503_is_not_a_failure():
    series = lr.timeseries(rows_at(0, 10) + rows_at(1, 10, status=503, ra=True) + rows_at(2, 3, status=503), 0, 5)
    assert [s["failed"] for s in series[:3]] == [0, 0, 3]  # a 503 without Retry-After is one
    assert lr.recovery(series, 0.0, 5.0)["clean_503"] == 10


def test_quota_exactness_uses_a_sliding_minute():
    ok = [(float(t), "quota_over", 5.0, 200, False) for t in range(0, 60)]  # 60 in [0, 60)
    ok += [(60.5, "quota_over", 5.0, 200, False)]  # 0 has left the window (t - 60 = 0.5)
    refused = [(30.5, "quota_over", 5.0, 429, True)]
    q = lr.quota_exactness(ok + refused, "quota_over", 60)
    assert (q["max_ok_in_any_minute"], q["exact"], q["refused_429"]) == (60, True, 1)
    q = lr.quota_exactness(ok + [(59.9, "quota_over", 5.0, 200, False)], "quota_over", 60)
    assert (q["max_ok_in_any_minute"], q["exact"]) == (61, False)


def test_quota_exactness_counts_a_request_only_where_it_was_sent_and_answered():
    # 60 fast answers in [0, 60), then one sent at 59.5 and answered 1.5 s later: the server may
    # have counted it after 60, when the first has left the window
    ok = [(float(t), "quota_over", 5.0, 200, False) for t in range(0, 60)]
    late = [(59.5, "quota_over", 1500.0, 200, False)]
    q = lr.quota_exactness(ok + late, "quota_over", 60)
    assert (q["max_ok_in_any_minute"], q["max_ok_sent_in_any_minute"], q["exact"]) == (60, 61, True)


def test_quota_exactness_sets_answers_during_a_redis_outage_apart():
    ok = [(float(t), "quota_over", 5.0, 200, False) for t in range(0, 60)]
    during = [(30.0 + i / 10, "quota_over", 5.0, 200, False) for i in range(5)]
    q = lr.quota_exactness(ok + during, "quota_over", 60, outages=[(29.9, 30.5)])
    assert (q["max_ok_in_any_minute"], q["ok_during_outage"], q["exact"]) == (59, 6, True)


def test_job_audit_finds_lost_and_duplicated_jobs():
    jobs = {
        "a": {"status": "done", "done": 20, "total": 20, "results": 20},
        "b": {"status": "failed", "error": "chunk 0 failed"},
        "c": {"status": "queued"},
        "d": {"status": "done", "done": 21, "total": 20},
    }
    audit = lr.job_audit(jobs)
    assert (audit["accepted"], audit["lost"], audit["lost_ids"], audit["duplicated"]) == (4, 1, ["c"], 1)
    assert audit["failed_reasons"] == {"chunk 0 failed": 1}


def test_format_table_names_every_part():
    rows = rows_at(0, 20) + rows_at(0, 5, name="quota_over", status=429)
    doc = {
        "saturation": {"rps": 100.0},
        "hold": {"target_rps": 80.0, "seconds": 30, "measured_rps": 79.5},
        "functions": lr.function_table(rows),
        "faults": [{"fault": "restart Redis", "at_s": 5.0, "failed": 3, "recovery_s": 2.0}],
        "jobs": lr.job_audit({}),
        "quota": {"over": lr.quota_exactness(rows, "quota_over", 60)},
    }
    text = lr.format_table(doc)
    for part in ("geocoding", "restart Redis", "jobs: 0 accepted", "quota over: plan 60/min: 0 x 200 and 5 x 429 of 5"):
        assert part in text, text


def test_procfile_lists_the_deployments_processes():
    procs = procfile()
    assert procs["web"].startswith("meridian serve")
    assert {"worker", "mapworker", "isoworker"} <= set(procs)


def test_locust_users_cover_the_mix():
    import subprocess
    import sys

    # locust patches the interpreter with gevent on import: check the users in a child process
    code = (
        "from bench.load_mix import MIX, MixUser, OverUser, UnderUser\n"
        "names = {t.__name__ for t in MixUser.tasks}\n"
        "assert names == set(MIX), names\n"
        "assert OverUser.fixed_count == 2 and UnderUser.fixed_count == 1\n"
        "print(round(sum(MIX[n] for n in ('geocoding', 'suggest')) / sum(MIX.values()), 2))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert 0.55 <= float(out.stdout.strip()) <= 0.65  # geocoding + suggest are about 60 % of the mix


def test_report_section_and_figure(tmp_path, monkeypatch):
    import bench.report as report

    monkeypatch.setattr(report, "OUT", tmp_path / "benchmarks.md")
    rows = rows_at(0, 30) + rows_at(1, 30) + rows_at(2, 4, status=0) + rows_at(3, 30) + rows_at(4, 30)
    series = lr.timeseries(rows, 0, 6)
    doc = {
        "saturation": {"rps": 40.0},
        "hold": {"target_rps": 32.0, "seconds": 6, "measured_rps": 31.0},
        "functions": lr.function_table(rows),
        "faults": [{"fault": "restart Redis", "at_s": 2.0, "note": "down 0.5 s", **lr.recovery(series, 2.0, 6.0)}],
        "jobs": lr.job_audit({"j": {"status": "done"}}),
        "quota": {"under": lr.quota_exactness(rows, "quota_under", 60)},
        "series": series,
    }
    text = "\n".join(report.load_section(doc))
    assert "| restart Redis | 2.0 | 4 | 0 | 1.0 | down 0.5 s |" in text, text
    assert "**lost 0**" in text and "![Throughput and p95" in text
    assert (tmp_path / "load.png").stat().st_size > 10_000


def test_fault_table_counts_requests_sent_just_before_a_fault_for_it():
    # failures sent at 9 s (in flight when the second fault starts at 10 s) belong to that fault
    rows = [r for t in range(20) for r in rows_at(t, 10)] + rows_at(9, 3, status=0)
    series = lr.timeseries(rows, 0, 20)
    faults = [{"fault": "a", "at_s": 2.0}, {"fault": "b", "at_s": 10.0}]
    a, b = lr.fault_table(series, faults)
    assert (a["failed"], b["failed"]) == (0, 3)
    assert b["recovery_s"] == 0.0  # clean again from 10 s on
