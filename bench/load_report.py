"""The numbers of ``bench.load`` from its request rows: the table per function, the time series,
recovery after each fault, quota exactness and the job audit. Pure functions over plain data, so
the suite tests them without a load run.

A row is ``(t, name, ms, status, retry_after)``: seconds since the start, the function, the
latency, the HTTP status (0: no answer) and whether a ``Retry-After`` header came with it.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

Row = tuple[float, str, float, int, bool]
QUOTA_WINDOW_S = 60.0
CLEAN_RUN_S = 3  # recovered: this many whole seconds in a row without a failed request
IN_FLIGHT_S = 2.0  # a fault's window opens this early: requests sent just before it meet it


def percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, math.ceil(q / 100.0 * len(ordered)) - 1))
    return round(ordered[k], 1)


def clean_503(row: Row) -> bool:
    """The answer of back-pressure or of a dependency outage: 503 with ``Retry-After``."""
    return row[3] == 503 and row[4]


def failed(row: Row) -> bool:
    """No answer, or a 5xx other than a clean 503 (counted apart): what a client cannot act on."""
    return row[3] == 0 or (row[3] >= 500 and not clean_503(row))


def function_table(rows: Iterable[Row]) -> list[dict[str, Any]]:
    by_name: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_name[row[1]].append(row)
    table = []
    for name in sorted(by_name, key=lambda n: -len(by_name[n])):
        rs = by_name[name]
        ok_ms = [r[2] for r in rs if 200 <= r[3] < 300]
        statuses = Counter(str(r[3]) for r in rs)
        table.append(
            {
                "function": name,
                "requests": len(rs),
                "p50_ms": percentile(ok_ms, 50),
                "p95_ms": percentile(ok_ms, 95),
                "p99_ms": percentile(ok_ms, 99),
                "status": dict(sorted(statuses.items())),
                "5xx": sum(1 for r in rs if r[3] >= 500),
                "clean_503": sum(1 for r in rs if clean_503(r)),
                "no_answer": sum(1 for r in rs if r[3] == 0),
            }
        )
    return table


def timeseries(rows: Iterable[Row], start: float, end: float) -> list[dict[str, Any]]:
    """Per whole second in [start, end): answered requests, failed ones and the p95 of the 2xx."""
    buckets: dict[int, list[Row]] = defaultdict(list)
    for row in rows:
        if start <= row[0] < end:
            buckets[int(row[0] - start)].append(row)
    out = []
    for second in range(int(math.ceil(end - start))):
        rs = buckets.get(second, [])
        ok = [r[2] for r in rs if 200 <= r[3] < 300]
        out.append(
            {
                "t": second,
                "rps": len(rs),
                "ok": len(ok),
                "failed": sum(1 for r in rs if failed(r)),
                "clean_503": sum(1 for r in rs if clean_503(r)),
                "p95_ms": percentile(ok, 95),
            }
        )
    return out


def recovery(series: Sequence[dict[str, Any]], fault_t: float, until_t: float) -> dict[str, Any]:
    """Failed requests from the fault to the next one, and the seconds until the first run of
    ``CLEAN_RUN_S`` clean seconds after the last failure (0 when nothing failed)."""
    window = [s for s in series if fault_t <= s["t"] < until_t]
    failures = sum(s["failed"] for s in window)
    refused = sum(s.get("clean_503", 0) for s in window)
    if not failures:
        return {"failed": 0, "clean_503": refused, "recovery_s": 0.0}
    last = max(s["t"] for s in window if s["failed"])
    clean = [s for s in series if s["t"] > last]
    recovered = clean[CLEAN_RUN_S - 1]["t"] - CLEAN_RUN_S + 1 if len(clean) >= CLEAN_RUN_S else None
    return {
        "failed": failures,
        "clean_503": refused,
        "recovery_s": None if recovered is None else round(recovered - fault_t, 1),
    }


def fault_table(series: Sequence[dict[str, Any]], faults: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per fault (``fault``, ``at_s`` into the hold, ``duration_s``, ``note``): the failed
    requests from ``IN_FLIGHT_S`` before it to ``IN_FLIGHT_S`` before the next one, and recovery."""
    end = float(len(series))
    rows = []
    for i, f in enumerate(faults):
        start = f["at_s"] - IN_FLIGHT_S
        until = faults[i + 1]["at_s"] - IN_FLIGHT_S if i + 1 < len(faults) else end
        result = recovery(series, start, until)
        if result["failed"] and result["recovery_s"] is not None:  # from the fault, not the window
            result["recovery_s"] = round(max(0.0, result["recovery_s"] - IN_FLIGHT_S), 1)
        rows.append({**f, **result})
    return rows


def _most_in_a_window(spans: Sequence[tuple[float, float]]) -> int:
    """The most spans lying wholly inside one window of ``QUOTA_WINDOW_S`` (spans sorted by start)."""
    worst = 0
    for i, (start, _) in enumerate(spans):
        inside = sum(1 for s, e in spans[i:] if s >= start and e <= start + QUOTA_WINDOW_S)
        worst = max(worst, inside)
    return worst


def quota_exactness(
    rows: Iterable[Row], name: str, plan_per_minute: int, outages: Sequence[tuple[float, float]] = ()
) -> dict[str, Any]:
    """Did a key get more 200s in a minute than its plan? The server counts a request at some moment
    between its sending and its answer, which the client's clock cannot see; so a 200 counts in a
    window only when it was both sent and answered inside it, and ``max_ok_in_any_minute`` is the
    most 200s any sliding window of ``QUOTA_WINDOW_S`` certainly holds: above the plan, the quota
    leaked. ``max_ok_sent_in_any_minute`` (by sending time alone) is the upper bound that latency
    inflates. 200s sent during ``outages`` (Redis down: served uncounted while QUOTA_FAIL_OPEN is
    true, the default) are counted apart, as ``ok_during_outage``, and left out of both."""
    rs = [r for r in rows if r[1] == name]

    def in_outage(t: float) -> bool:
        return any(a <= t <= b for a, b in outages)

    ok = sorted((r[0], r[0] + r[2] / 1000.0) for r in rs if r[3] == 200 and not in_outage(r[0]))
    certain = _most_in_a_window(ok)
    sent_only = _most_in_a_window([(s, s) for s, _ in ok])
    return {
        "requests": len(rs),
        "ok": sum(1 for r in rs if r[3] == 200),
        "ok_during_outage": sum(1 for r in rs if r[3] == 200 and in_outage(r[0])),
        "refused_429": sum(1 for r in rs if r[3] == 429),
        "other": dict(Counter(str(r[3]) for r in rs if r[3] not in (200, 429))),
        "plan_per_minute": plan_per_minute,
        "max_ok_in_any_minute": certain,
        "max_ok_sent_in_any_minute": sent_only,
        "exact": certain <= plan_per_minute,
    }


def job_audit(jobs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Every accepted job must settle: ``lost`` = still open after the final polling;
    ``duplicated`` = more results or progress than items."""
    states = Counter(str(j.get("status")) for j in jobs.values())
    lost = sorted(job_id for job_id, j in jobs.items() if j.get("status") not in ("done", "failed"))
    duplicated = sorted(
        job_id
        for job_id, j in jobs.items()
        if j.get("total") is not None and ((j.get("done") or 0) > j["total"] or (j.get("results") or 0) > j["total"])
    )
    return {
        "accepted": len(jobs),
        "states": dict(states),
        "lost": len(lost),
        "lost_ids": lost[:20],
        "duplicated": len(duplicated),
        "failed_reasons": dict(Counter(j.get("error", "") for j in jobs.values() if j.get("status") == "failed")),
    }


def format_table(doc: dict[str, Any]) -> str:
    """The one table ``bench.load`` prints."""
    lines = [
        f"saturation {doc['saturation']['rps']} req/s; hold at {doc['hold']['target_rps']} req/s "
        f"for {doc['hold']['seconds']} s (measured {doc['hold']['measured_rps']} req/s)",
        "",
        f"{'function':<16}{'requests':>9}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'5xx':>6}{'503+RA':>7}  statuses",
    ]
    for r in doc["functions"]:
        lines.append(
            f"{r['function']:<16}{r['requests']:>9}{_n(r['p50_ms']):>9}{_n(r['p95_ms']):>9}{_n(r['p99_ms']):>9}"
            f"{r['5xx']:>6}{r['clean_503']:>7}  {r['status']}"
        )
    lines += ["", f"{'fault':<26}{'at s':>7}{'failed':>8}{'503+RA':>8}{'recovery s':>12}  note"]
    for f in doc["faults"]:
        lines.append(
            f"{f['fault']:<26}{f['at_s']:>7}{f['failed']:>8}{f.get('clean_503', 0):>8}{_n(f['recovery_s']):>12}"
            f"  {f.get('note', '')}"
        )
    jobs = doc["jobs"]
    lines += [
        "",
        f"jobs: {jobs['accepted']} accepted, states {jobs['states']}, lost {jobs['lost']}, "
        f"duplicated {jobs['duplicated']}",
    ]
    lines += [f"quota {name}: {quota_summary(q)}" for name, q in doc["quota"].items()]
    return "\n".join(lines)


def quota_summary(q: dict[str, Any]) -> str:
    """One sentence on a key's quota exactness (:func:`quota_exactness`)."""
    return (
        f"plan {q['plan_per_minute']}/min: {q['ok']} x 200 and {q['refused_429']} x 429 of {q['requests']}; "
        f"at most {q['max_ok_in_any_minute']} x 200 sent and answered within one minute "
        f"({'exact' if q['exact'] else 'EXCEEDED'}; {q.get('max_ok_sent_in_any_minute', '?')} by sending time "
        f"alone); {q.get('ok_during_outage', 0)} x 200 while Redis was down (served uncounted: QUOTA_FAIL_OPEN)"
    )


def _n(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"
