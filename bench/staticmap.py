"""Static map benchmark: engine.services.staticmap.run, 600x400 PNG, uncached.

Every render has its own random centre inside the region's data bbox (no two requests alike; the
engine keeps no image cache; it keeps the base map's pieces, but draws them only for the second
map that needs one, so these maps are drawn whole). One warm-up render per process is excluded
(font loading). Timings are wall-clock on a shared 2-core machine,
with per-render CPU time beside them.

Rows: per region and zoom (13-17), 600x400 scale 1 PNG; then 600x400 JPEG, 600x400 scale 2 and
1280x1280 on Monaco zoom 15. Target (issue 7): 600x400 p50 <= 300 ms uncached.

There is no static-map peer among OSRM / Valhalla / Nominatim, so no peer column.

Usage:
    .venv/bin/python bench/staticmap.py [--per-zoom 20] [--seed 1]
    .venv/bin/python bench/staticmap.py --renders docs/renders   # (re)write the sample renders
Writes bench/results/staticmap.json. Data: DATA_DIR/MERIDIAN_TEST_DATA_DIR if set (samples
imported there, idempotent), else a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.dataset import DatasetRegistry  # noqa: E402
from engine.ingest.pipeline import import_pbf  # noqa: E402
from engine.render.overlays import Marker  # noqa: E402
from engine.render.overlays import Path as MapPath  # noqa: E402
from engine.services.staticmap import StaticMapParams, run  # noqa: E402

SAMPLES = ROOT / "data" / "samples"
REGIONS = {
    "monaco": (7.360, 43.720, 7.480, 43.760),  # a little inside the extract bbox
    "helsinki": (24.937, 60.165, 24.951, 60.178),
}
ZOOMS = (13, 14, 15, 16, 17)
MONACO = (43.7384, 7.4246)
HELSINKI = (60.1699, 24.9440)

RENDERS = {
    "monaco-z13": StaticMapParams(center=(43.735, 7.425), zoom=13),
    "monaco-z15": StaticMapParams(center=MONACO, zoom=15),
    "monaco-z17": StaticMapParams(center=(43.7395, 7.4272), zoom=17),
    "helsinki-z14": StaticMapParams(center=HELSINKI, zoom=14),
    "helsinki-z16": StaticMapParams(center=HELSINKI, zoom=16),
    "helsinki-z18": StaticMapParams(center=(60.1686, 24.9415), zoom=18),
    "monaco-markers-path": StaticMapParams(
        markers=(
            Marker(43.7311, 7.4197, "red", "A"),
            Marker(43.7396, 7.4270, "blue", "B"),
            Marker(43.7477, 7.4340, "green", "C"),
        ),
        paths=(
            MapPath(
                (
                    (43.7311, 7.4197),
                    (43.7335, 7.4205),
                    (43.7352, 7.4213),
                    (43.7373, 7.4236),
                    (43.7396, 7.4270),
                    (43.7431, 7.4304),
                    (43.7477, 7.4340),
                ),
                "0x2a6fdbcc",
                5,
            ),
        ),
    ),
    "helsinki-markers-path-x2": StaticMapParams(
        width=400,
        height=300,
        scale=2,
        markers=(Marker(60.1710, 24.9414, "orange", "1"), Marker(60.1675, 24.9520, "purple", "2")),
        paths=(
            MapPath(
                ((60.1710, 24.9414), (60.1699, 24.9440), (60.1688, 24.9470), (60.1680, 24.9500), (60.1675, 24.9520)),
                "red",
                4,
            ),
        ),
    ),
}


def _registry() -> DatasetRegistry:
    root = os.environ.get("MERIDIAN_TEST_DATA_DIR") or os.environ.get("DATA_DIR")
    root_path = Path(root) if root else Path(tempfile.mkdtemp(prefix="bench-staticmap-"))
    for region in REGIONS:
        import_pbf(SAMPLES / f"{region}.osm.pbf", root_path, region)
    return DatasetRegistry(root_path)


def _measure(datasets, params_list) -> dict:
    wall, cpu, sizes = [], [], []
    for params in params_list:
        t0, c0 = time.perf_counter(), time.process_time()
        body = run(datasets, params).body
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
        sizes.append(len(body))
    q = statistics.quantiles(wall, n=20, method="inclusive") if len(wall) >= 2 else [wall[0]] * 19
    return {
        "n": len(wall),
        "p50_ms": round(statistics.median(wall), 1),
        "p95_ms": round(q[18], 1),
        "max_ms": round(max(wall), 1),
        "cpu_p50_ms": round(statistics.median(cpu), 1),
        "kb_p50": round(statistics.median(sizes) / 1024, 1),
    }


def _random_params(rng, bbox, zoom, n, **kw) -> list[StaticMapParams]:
    w, s, e, nn = bbox
    return [
        StaticMapParams(center=(float(rng.uniform(s, nn)), float(rng.uniform(w, e))), zoom=zoom, **kw) for _ in range(n)
    ]


def write_renders(datasets, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, params in RENDERS.items():
        result = run(datasets, params)
        ext = "png" if result.content_type == "image/png" else "jpg"
        path = out_dir / f"{name}.{ext}"
        path.write_bytes(result.body)
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-zoom", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--renders", type=Path, help="write the sample renders here and exit")
    args = ap.parse_args()
    datasets = _registry()
    if args.renders:
        write_renders(datasets, args.renders)
        return 0
    rng = np.random.default_rng(args.seed)
    run(datasets, StaticMapParams(center=MONACO, zoom=12, width=64, height=64))  # warm-up
    rows = []
    for region, bbox in REGIONS.items():
        for zoom in ZOOMS:
            stats = _measure(datasets, _random_params(rng, bbox, zoom, args.per_zoom))
            rows.append({"case": f"{region} z{zoom} 600x400 png", **stats})
    mixed = []
    for bbox in REGIONS.values():
        for zoom in ZOOMS:
            mixed += _random_params(rng, bbox, zoom, max(args.per_zoom // 4, 2))
    rng.shuffle(mixed)
    overall = _measure(datasets, mixed)
    rows.append({"case": "ALL 600x400 png (mixed zooms 13-17)", **overall})
    mbox = REGIONS["monaco"]
    n_extra = max(args.per_zoom // 2, 3)
    rows.append(
        {"case": "monaco z15 600x400 jpg", **_measure(datasets, _random_params(rng, mbox, 15, n_extra, format="jpg"))}
    )
    rows.append(
        {"case": "monaco z15 600x400 scale 2", **_measure(datasets, _random_params(rng, mbox, 15, n_extra, scale=2))}
    )
    rows.append(
        {
            "case": "monaco z15 1280x1280",
            **_measure(datasets, _random_params(rng, mbox, 15, n_extra, width=1280, height=1280)),
        }
    )
    header = f"{'case':<40} {'n':>4} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'cpu p50':>8} {'KB':>7}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['case']:<40} {r['n']:>4} {r['p50_ms']:>8} {r['p95_ms']:>8} {r['max_ms']:>8} "
            f"{r['cpu_p50_ms']:>8} {r['kb_p50']:>7}"
        )
    target_ok = overall["p50_ms"] <= 300
    print(f"\ntarget 600x400 p50 <= 300 ms uncached: {'MET' if target_ok else 'NOT MET'} ({overall['p50_ms']} ms)")
    out = ROOT / "bench" / "results" / "staticmap.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "benchmark": "staticmap",
                "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "machine": {
                    "python": platform.python_version(),
                    "cpus": os.cpu_count(),
                    "note": "shared 2-core machine; wall-clock ms",
                },
                "params": {"per_zoom": args.per_zoom, "seed": args.seed, "zooms": list(ZOOMS)},
                "target": {"p50_ms": 300, "met": target_ok},
                "rows": rows,
            },
            indent=2,
        )
    )
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
