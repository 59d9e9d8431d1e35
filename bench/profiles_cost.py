"""What the foot and bicycle profiles cost: each region imported twice, car alone and car + foot +
bicycle, then opened in a fresh process that warms every component and routes once per profile.

    python -m bench.profiles_cost [--regions monaco,helsinki] [--synthetic 1000000] [--keep-synthetic]

Each import runs in a child process (``engine.ingest.pipeline.import_pbf`` with ``force``): its
wall time, roads-stage time, the manifest's peak RSS (the largest stage's, engine.progress) and
the dataset's size on disk. The serving child opens the dataset as a web process does
(``engine.warmup.warm_dataset``), routes random legs with each profile it has, and reads its own
``/proc/self/smaps_rollup``: anonymous memory is what the process built (a child forked from
nothing shares none of it), ``private`` (USS) adds the dataset's mapped pages only it touched
(:mod:`bench.memory`). ``--synthetic N`` adds bench/synthetic.py's city of N nodes (its all-profile dataset is kept
in ``$MERIDIAN_SCALING_DIR/data-N``, where bench.matrix_job finds it, with ``--keep-synthetic``).
Results: bench/results/travel-profiles.json (the section "Travel profiles" of docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench.child import json_child
from bench.memory import smaps_rollup_mb
from bench.record import run_record
from config.settings import PROJECT_ROOT
from engine.identical_files import distinct_bytes

RESULTS = PROJECT_ROOT / "bench" / "results" / "travel-profiles.json"
SAMPLES = PROJECT_ROOT / "data" / "samples"
SCALING = Path(os.environ.get("MERIDIAN_SCALING_DIR", "/tmp/meridian-scaling"))
VARIANTS = ("car", "car,foot,bicycle")


def _tree_mb(*paths: Path) -> float:
    """Their size on disk: a file the import linked under several paths counts once."""
    return round(distinct_bytes(*paths) / 1e6, 2)


def child_import(pbf: str, data: str, region: str, profiles: str) -> dict[str, Any]:
    from engine.ingest.pipeline import import_pbf

    t0 = time.perf_counter()
    res = import_pbf(Path(pbf), Path(data), region, force=True, profiles=tuple(profiles.split(",")))
    graphs = [d for d in res.path.iterdir() if d.is_dir() and d.name.startswith("graph")]
    return {
        "wall_s": round(time.perf_counter() - t0, 1),
        "roads_stage_s": round(res.manifest["stages"]["roads"]["seconds"], 1),
        "peak_rss_mib": round(res.manifest["peak_rss_mb"]),
        "dataset_mb": _tree_mb(res.path),
        "graph_mb": _tree_mb(*graphs),
    }


LEGS_PER_PROFILE = 50


def _route_randomly(router, legs: int) -> None:
    """``legs`` legs between random points of the router's graph (what a day of requests does to
    its query's memory: the workspace is written over the whole graph)."""
    lat, lng = np.asarray(router.g.node_lat), np.asarray(router.g.node_lng)
    rng = np.random.default_rng(legs)
    for _ in range(legs):
        o, d = (router.snap(rng.uniform(lat.min(), lat.max()), rng.uniform(lng.min(), lng.max())) for _ in "od")
        if o is not None and d is not None:
            router.leg(o, d)


def child_serve(data: str, region: str) -> dict[str, Any]:
    from engine.dataset import DatasetRegistry
    from engine.warmup import warm_dataset

    ds = DatasetRegistry(Path(data)).require(region)
    warm_dataset(ds)
    for profile in ds.profiles:  # the warm-up routes the car: a web process serves every profile
        _route_randomly(ds.component("router", profile), LEGS_PER_PROFILE)
    fields = smaps_rollup_mb()
    return {
        "rss": round(fields["Rss"], 1),
        "anonymous": round(fields["Anonymous"], 1),
        "private": round(fields["Private_Clean"] + fields["Private_Dirty"], 1),
    }


def child_cache() -> dict[str, Any]:
    """Fill the numba cache as the image's build step does (``meridian warmup``), so that no
    import or serving child measured after it compiles (a change to a kernel's module
    invalidates its cache)."""
    from engine.warmup import build_cache

    built = build_cache()
    return {"compiled": built.compiled, "seconds": built.seconds}


def _child(*args: str) -> dict[str, Any]:
    return json_child("bench.profiles_cost", ["--child", *args])


def _measure(region: str, label: str, pbf: Path, data_for: dict[str, Path]) -> Iterator[tuple[dict, dict]]:
    """Each variant's import row and serving-memory row, as soon as it is measured."""
    for profiles in VARIANTS:
        data = data_for[profiles]
        imported = {"region": label, "profiles": profiles, **_child("import", str(pbf), str(data), region, profiles)}
        served = {"region": label, "profiles": profiles, **_child("serve", str(data), region)}
        print(json.dumps(imported), json.dumps(served), flush=True)
        yield imported, served


def _synthetic_pbf(nodes: int) -> Path:
    from bench.synthetic import generate, write_pbf

    SCALING.mkdir(parents=True, exist_ok=True)
    pbf = SCALING / f"synthetic-{nodes}.osm.pbf"
    if not pbf.exists():
        write_pbf(generate(nodes, 1), pbf)
    return pbf


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--regions", default="monaco,helsinki", help="samples of data/samples")
    ap.add_argument("--synthetic", type=int, default=0, help="also bench/synthetic.py's city of this many nodes")
    ap.add_argument("--keep-synthetic", action="store_true", help="keep its all-profile dataset for bench.matrix_job")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        kind, *rest = args.child
        children: dict[str, Callable[..., dict[str, Any]]] = {
            "import": child_import,
            "serve": child_serve,
            "cache": child_cache,
        }
        print(json.dumps(children[kind](*rest)))
        return
    cache = _child("cache")  # the imports' and the services' kernels compiled before any is timed
    print(f"numba cache: {cache['compiled']} kernels compiled in {cache['seconds']} s", flush=True)
    load_start = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="meridian-profiles-cost-"))
    runs = [
        (r, r, SAMPLES / f"{r}.osm.pbf", {p: tmp / r / p.replace(",", "-") for p in VARIANTS})
        for r in args.regions.split(",")
        if r
    ]
    every = SCALING / f"data-{args.synthetic}"
    if args.synthetic:
        shutil.rmtree(every, ignore_errors=True)
        dirs = {"car": tmp / "synthetic-car", VARIANTS[1]: every}
        runs.append(("synthetic", f"synthetic {args.synthetic:,} nodes", _synthetic_pbf(args.synthetic), dirs))
    imports: list[dict] = []
    memory: list[dict] = []
    for region, label, pbf, dirs in runs:
        for imported, served in _measure(region, label, pbf, dirs):
            imports.append(imported)
            memory.append(served)
            _write(argv, load_start, imports, memory)  # a run stopped later keeps what it measured
    if args.synthetic and not args.keep_synthetic:
        shutil.rmtree(every, ignore_errors=True)
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"written {RESULTS}")


def _write(argv: list[str] | None, load_start: float, imports: list[dict], memory: list[dict]) -> None:
    doc = {
        **run_record("bench.profiles_cost", argv, load_start),
        "what": "each region imported car alone and car+foot+bicycle (`meridian import --profiles`, numba "
        "cache warm), then one fresh process per dataset that warms every component, runs each service once "
        f"and routes {LEGS_PER_PROFILE} random legs with each profile (/proc/self/smaps_rollup)",
        "machine_note": f"2 shared cores, load average {load_start:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the last write",
        "imports": imports,
        "process_memory_mib": memory,
    }
    RESULTS.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
