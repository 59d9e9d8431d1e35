"""Figures for docs/benchmarks.md (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after choosing the backend)

# (panel title, value of one size's result, unit)
SCALING_PANELS = (
    ("import (every stage)", lambda r: r["import"]["seconds"], "s"),
    ("peak memory of the import", lambda r: r["import"]["peak_rss_mb"], "MB"),
    ("route p50, in process", lambda r: r["query"]["route_ms"]["p50"], "ms"),
)


def scaling_figure(doc: dict, out: Path) -> Path | None:
    """The scaling curve of ``bench.scaling``'s results: one log-log panel per measure against the
    network's OSM nodes, with the 10-minute import budget marked. None when nothing was measured."""
    sizes = [r for r in doc.get("import_and_services", []) if "error" not in r]
    if not sizes:
        return None
    nodes = [r["osm_nodes"] for r in sizes]
    fig, axes = plt.subplots(1, len(SCALING_PANELS), figsize=(12, 3.6), constrained_layout=True)
    for ax, (title, value, unit) in zip(axes, SCALING_PANELS, strict=True):
        ys = [value(r) for r in sizes]
        ax.loglog(nodes, ys, marker="o")
        for x, y in zip(nodes, ys, strict=True):
            label = f"{y:.3g} {unit}" if y < 1000 else f"{y:,.0f} {unit}"
            ax.annotate(label, (x, y), textcoords="offset points", xytext=(4, -12), fontsize=8)
        ax.margins(x=0.3, y=0.2)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("OSM nodes")
        ax.set_ylabel(unit)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].axhline(600, color="tab:red", linestyle="--", linewidth=1)
    axes[0].annotate(
        "10 min budget", (nodes[0], 600), textcoords="offset points", xytext=(2, 4), fontsize=8, color="tab:red"
    )
    fig.suptitle("Synthetic grid cities (bench/synthetic.py)", fontsize=11)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def load_figure(doc: dict, out: Path) -> Path | None:
    """``bench.load``'s hold: answered requests per second (and failed ones) and the p95 latency of
    the 2xx over time, each fault of the schedule marked where it happened. None without a series."""
    series = doc.get("series") or []
    if not series:
        return None
    t = [s["t"] for s in series]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 5.5), sharex=True, constrained_layout=True)
    top.plot(t, [s["rps"] for s in series], label="answered req/s", linewidth=1)
    top.plot(t, [s.get("clean_503", 0) for s in series], label="503 + Retry-After /s", linewidth=1)
    top.plot(t, [s["failed"] for s in series], label="failed /s (no answer, other 5xx)", linewidth=1, color="tab:red")
    top.axhline(
        doc["hold"]["target_rps"], color="grey", linestyle=":", linewidth=1, label="target (80 % of saturation)"
    )
    top.set_ylabel("requests / s")
    top.legend(fontsize=8, loc="upper right")
    bottom.plot(t, [s["p95_ms"] if s["p95_ms"] is not None else float("nan") for s in series], linewidth=1)
    bottom.set_yscale("log")
    bottom.set_ylabel("p95 of 2xx, ms")
    bottom.set_xlabel("seconds into the hold")
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
        for f in doc.get("faults", []):
            ax.axvline(f["at_s"], color="tab:purple", linestyle="--", linewidth=0.8)
    for f in doc.get("faults", []):
        top.annotate(
            f["fault"],
            (f["at_s"], 0),
            xycoords=("data", "axes fraction"),
            xytext=(2, 4),
            textcoords="offset points",
            fontsize=7,
            rotation=90,
            color="tab:purple",
            va="bottom",
        )
    fig.suptitle("bench.load: the mix at 80 % of saturation with faults", fontsize=11)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


SEARCH_PANELS = (
    ("search import", lambda r: r["import"]["search_s"], "s"),
    ("peak memory of the import", lambda r: r["import"]["peak_rss_mb"], "MB"),
    ("p50 in process", None, "ms"),
    ("worker anonymous memory", lambda r: r["query"]["memory_after_mb"]["anon_mb"], "MB"),
)


def search_scaling_figure(doc: dict, out: Path) -> Path | None:
    """``bench.scaling_search``'s curve: import time, import memory, geocode/suggest/reverse p50 and
    a worker's private memory against the address count (log-log). None when nothing was measured."""
    sizes = [r for r in doc.get("search", []) if "error" not in r]
    if not sizes:
        return None
    xs = [r["addresses"] for r in sizes]
    fig, axes = plt.subplots(1, len(SEARCH_PANELS), figsize=(14, 3.6), constrained_layout=True)
    for ax, (title, value, unit) in zip(axes, SEARCH_PANELS, strict=True):
        if value is None:
            for key, label in (("geocode_ms", "geocode"), ("suggest_ms", "suggest"), ("reverse_ms", "reverse")):
                ax.loglog(xs, [r["query"][key]["p50"] for r in sizes], marker="o", label=label)
            ax.legend(fontsize=8)
        else:
            ys = [value(r) for r in sizes]
            ax.loglog(xs, ys, marker="o")
            for x, y in zip(xs, ys, strict=True):
                ax.annotate(f"{y:,.0f} {unit}", (x, y), textcoords="offset points", xytext=(4, -12), fontsize=8)
        ax.margins(x=0.3, y=0.2)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("addresses")
        ax.set_ylabel(unit)
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle("Search on synthetic cities with addresses (bench/synthetic_search.py)", fontsize=11)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
