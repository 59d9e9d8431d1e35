"""An account's usage from the Redis counters the quotas keep (``accounts/quota.py``): requests
per service per UTC day over the last days, summed over the account's keys; drawn as an SVG bar
chart (matplotlib ``Figure`` + its SVG canvas, never pyplot) or written as CSV."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from accounts.quota import QuotaCounter
from accounts.store import KeyRecord

DAYS = 30


def daily_usage(counter: QuotaCounter, keys: list[KeyRecord], days: int = DAYS) -> dict[str, dict[str, int]]:
    """{YYYY-MM-DD: {service: requests}} for every one of the last ``days`` UTC days (oldest
    first; days without requests are present and empty), summed over ``keys``."""
    today = datetime.now(UTC).date()
    out: dict[str, dict[str, int]] = {
        (today - timedelta(days=i)).isoformat(): defaultdict(int) for i in range(days - 1, -1, -1)
    }
    for key in keys:
        for day, services in counter.usage(key.prefix, days).items():
            if day in out:
                for service, n in services.items():
                    out[day][service] += n
    return {day: dict(services) for day, services in out.items()}


def services_in(usage: dict[str, dict[str, int]]) -> list[str]:
    return sorted({s for services in usage.values() for s in services})


def to_csv(usage: dict[str, dict[str, int]]) -> str:
    services = services_in(usage)
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["date", *services, "total"])
    for day, counts in usage.items():
        row = [counts.get(s, 0) for s in services]
        writer.writerow([day, *row, sum(row)])
    return buf.getvalue()


def to_svg(usage: dict[str, dict[str, int]]) -> bytes:
    """Stacked daily bars, one colour per service."""
    fig = Figure(figsize=(9, 3.2), dpi=100)
    FigureCanvasSVG(fig)
    ax = fig.add_subplot()
    days = list(usage)
    x = range(len(days))
    bottoms = [0] * len(days)
    for service in services_in(usage):
        heights = [usage[d].get(service, 0) for d in days]
        ax.bar(x, heights, bottom=bottoms, label=service, width=0.8)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    ax.set_xticks(list(x)[::5], [d[5:] for d in days][::5])
    ax.set_ylabel("requests")
    ax.set_title(f"Requests per day, last {len(days)} days (UTC)", fontsize=10)
    ax.spines[["top", "right"]].set_visible(False)
    if any(bottoms):
        ax.legend(fontsize=8, frameon=False, loc="upper left", ncols=4)
    else:
        ax.text(0.5, 0.5, "no requests yet", transform=ax.transAxes, ha="center", va="center", color="#888")
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="svg", metadata={"Date": None})
    return out.getvalue()
