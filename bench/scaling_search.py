"""Search and geofencing scaling curve on synthetic cities with addresses (bench/synthetic_search.py).

For each address count: generate the city (road nodes = addresses / 2 unless ``--nodes``), import
the stages search needs (``admin`` and ``search``) in a child process whose peak RSS is the
import's memory, then in another child, a fresh process like a web worker, open the dataset and
time in process (engine.services.*):

* ``geocode``: '<street> <number>, <town>' of random addresses (hit: the first result is that
  address), and the same with one letter of the street changed (``geocode_typo``);
* ``suggest``: the first words of '<street> <number>' cut inside a word, as typed;
* ``reverse``: 2-6 m from random addresses (the first call, which builds the process's spatial
  cache, is reported apart as ``reverse_first_ms``);
* memory of that process after the queries, from /proc/self/smaps_rollup: anonymous (heap and
  arrays: what each gunicorn worker pays for itself) and file-backed (the memory-mapped dataset,
  one copy in the page cache for all workers; smaps calls it private while only one process maps
  it), and the growth from opening the search index.

Fences: ``--fences 10000,100000`` polygons and circles over the city (one account at that size):
FenceIndex build time, private memory, ``containing`` and ``check(within 100 m)`` p50/p95.

    .venv/bin/python -m bench.scaling_search [--addresses 100000,1000000] [--fences 10000,100000]

The load average is recorded next to every row (the machine is shared). Results merge by size
into bench/results/scaling-search.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from bench.child import json_child
from bench.memory import smaps_rollup_mb
from config.settings import PROJECT_ROOT

RESULTS = PROJECT_ROOT / "bench" / "results"
OUT = RESULTS / "scaling-search.json"
WORK = Path(os.environ.get("MERIDIAN_SCALING_DIR", "/tmp/meridian-scaling"))
REGION = "synthetic"
WEB_THREADS = 4  # threads of a gunicorn worker (config/gunicorn.py)


def memory_mb() -> dict[str, float]:
    """This process's resident memory split into private and shared pages (MB); anonymous is what
    each worker really pays (:mod:`bench.memory`)."""
    fields = smaps_rollup_mb()
    private = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
    shared = fields.get("Shared_Clean", 0) + fields.get("Shared_Dirty", 0)
    anon = fields.get("Anonymous", 0)
    return {
        "rss_mb": round(fields.get("Rss", 0), 1),
        "private_mb": round(private, 1),
        "shared_mb": round(shared, 1),
        "anon_mb": round(anon, 1),
        "file_mb": round(fields.get("Rss", 0) - anon, 1),
    }


def pct(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {
        "p50": round(float(np.percentile(values, 50)), 3),
        "p95": round(float(np.percentile(values, 95)), 3),
        "n": len(values),
    }


def load_average() -> float:
    return round(os.getloadavg()[0], 1)


# -- children ---------------------------------------------------------------------------------------


def child_import(pbf: str, data: str) -> dict[str, Any]:
    from engine.ingest.pipeline import STAGES, import_pbf  # noqa: PLC0415

    stages = tuple(s for s in STAGES if s.name in ("admin", "search"))
    t0 = time.perf_counter()
    res = import_pbf(Path(pbf), Path(data), REGION, force=True, stages=stages)
    return {
        "seconds": round(time.perf_counter() - t0, 1),
        "search_s": res.manifest["stages"]["search"]["seconds"],
        "counts": res.manifest["counts"],
        "search_db_mb": round((res.path / "search.sqlite").stat().st_size / 1e6, 1),
        # the manifest's: each stage resets the process's peak (engine.progress)
        "peak_rss_mb": res.manifest["peak_rss_mb"],
        "cpu_s": round(sum(resource.getrusage(resource.RUSAGE_SELF)[:2]), 1),  # less inflated by load
        "load": load_average(),
    }


def _typo(word: str, rng: np.random.Generator) -> str:
    """One letter of the word replaced by another (not the first: people get that one right)."""
    i = int(rng.integers(1, len(word)))
    letters = [c for c in "aeioulnrst" if c != word[i]]
    return word[:i] + letters[int(rng.integers(len(letters)))] + word[i + 1 :]


def _queries(layer_path: str, n: int, seed: int) -> dict[str, list[Any]]:
    data = np.load(layer_path, allow_pickle=False)
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, data["street"].size, n)
    out: dict[str, list[Any]] = {"geocode": [], "typo": [], "suggest": [], "reverse": []}
    for i in pick.tolist():
        street, number, town = str(data["street"][i]), str(data["number"][i]), str(data["town"][i])
        lat, lng = float(data["lat"][i]), float(data["lng"][i])
        out["geocode"].append((f"{street} {number}, {town}", street, number))
        stem, kind = street.split(" ", 1)
        out["typo"].append((f"{_typo(stem, rng)} {kind} {number}, {town}", street, number))
        typed = f"{street} {number}"
        cut = int(rng.integers(len(stem) // 2 + 2, len(typed) - 1))
        out["suggest"].append((typed[:cut], street, number))
        d = float(rng.uniform(2, 6))
        a = float(rng.uniform(0, 2 * math.pi))
        out["reverse"].append(
            (
                lat + d * math.sin(a) / 111_132.0,
                lng + d * math.cos(a) / 111_132.0 / math.cos(math.radians(lat)),
                street,
                number,
            )
        )
    return out


def child_query(data: str, layer_path: str, n: int, seed: int) -> dict[str, Any]:
    from engine.dataset import DatasetRegistry  # noqa: PLC0415
    from engine.services.geocoding import GeocodeParams  # noqa: PLC0415
    from engine.services.geocoding import run as geocode  # noqa: PLC0415
    from engine.services.reverse_geocoding import ReverseParams  # noqa: PLC0415
    from engine.services.reverse_geocoding import run as reverse  # noqa: PLC0415
    from engine.services.suggest import SuggestParams  # noqa: PLC0415
    from engine.services.suggest import run as suggest  # noqa: PLC0415

    queries = _queries(layer_path, n, seed)
    before = memory_mb()
    reg = DatasetRegistry(Path(data))
    t0 = time.perf_counter()
    dataset = reg.get(REGION)
    assert dataset is not None, f"no {REGION} dataset in {data}"
    dataset.component("search")
    open_s = time.perf_counter() - t0
    opened = memory_mb()

    def hit(result: dict[str, Any], street: str, number: str) -> bool:
        first = (result.get("candidates") or result.get("suggestions") or [{}])[0]
        addr = first.get("address") or {}
        return addr.get("street") == street and str(addr.get("number")) == number

    def timed(fn: Any, params: Any) -> tuple[float, dict[str, Any]]:
        t = time.perf_counter()
        res = fn(reg, params)
        return (time.perf_counter() - t) * 1e3, res

    geocode(reg, GeocodeParams(query=queries["geocode"][0][0]))  # warm-up: imports, first statements
    rows: dict[str, Any] = {}
    for name in ("geocode", "typo"):
        ms, hits = [], 0
        for text, street, number in queries[name]:
            t, res = timed(geocode, GeocodeParams(query=text))
            ms.append(t)
            hits += hit(res, street, number)
        rows[f"{'geocode' if name == 'geocode' else 'geocode_typo'}_ms"] = pct(ms)
        rows[f"{'geocode' if name == 'geocode' else 'geocode_typo'}_hit"] = round(hits / len(ms), 3)
    ms, hits = [], 0
    for text, street, _number in queries["suggest"]:
        t, res = timed(suggest, SuggestParams(q=text))
        ms.append(t)
        hits += any((s.get("address") or {}).get("street") == street for s in res["suggestions"])
    rows["suggest_ms"], rows["suggest_hit"] = pct(ms), round(hits / len(ms), 3)
    lat, lng, *_ = queries["reverse"][0]
    rows["reverse_first_ms"] = round(timed(reverse, ReverseParams(lat=lat, lng=lng))[0], 1)
    ms, hits = [], 0
    for lat, lng, street, number in queries["reverse"]:
        t, res = timed(reverse, ReverseParams(lat=lat, lng=lng))
        ms.append(t)
        hits += hit(res, street, number)
    rows["reverse_ms"], rows["reverse_hit"] = pct(ms), round(hits / len(ms), 3)
    after = memory_mb()
    return {
        "open_search_s": round(open_s, 2),
        **rows,
        "memory_before_mb": before,
        "memory_opened_mb": opened,
        "memory_after_mb": after,
        "search_private_mb": round(opened["private_mb"] - before["private_mb"], 1),
        "private_growth_mb": round(after["private_mb"] - before["private_mb"], 1),
        "anon_growth_mb": round(after["anon_mb"] - before["anon_mb"], 1),
        "load": load_average(),
    }


def child_worker(data: str, seed: int) -> dict[str, Any]:
    """A web worker's memory with a whole region loaded: every component opened and used once
    (route, routes from the threads of a gunicorn worker, isochrone, geocode, suggest, reverse),
    memory read after each."""
    from engine.dataset import DatasetRegistry  # noqa: PLC0415
    from engine.services.geocoding import GeocodeParams  # noqa: PLC0415
    from engine.services.geocoding import run as geocode  # noqa: PLC0415
    from engine.services.isochrone import IsochroneParams  # noqa: PLC0415
    from engine.services.isochrone import run as isochrone  # noqa: PLC0415
    from engine.services.reverse_geocoding import ReverseParams  # noqa: PLC0415
    from engine.services.reverse_geocoding import run as reverse  # noqa: PLC0415
    from engine.services.routing import RoutingParams  # noqa: PLC0415
    from engine.services.routing import run as route  # noqa: PLC0415
    from engine.services.suggest import SuggestParams  # noqa: PLC0415
    from engine.services.suggest import run as suggest  # noqa: PLC0415

    steps: dict[str, Any] = {"start": memory_mb()}
    reg = DatasetRegistry(Path(data))
    dataset = reg.all()[0]  # the one region of DATA_DIR
    bbox = dataset.bbox
    rng = np.random.default_rng(seed)

    def point() -> tuple[float, float]:
        return float(rng.uniform(bbox.min_lat, bbox.max_lat)), float(rng.uniform(bbox.min_lng, bbox.max_lng))

    def routed(pair: tuple[tuple[float, float], tuple[float, float]]) -> None:
        route(reg, RoutingParams(origin=pair[0], destination=pair[1], steps=True))

    t0 = time.perf_counter()
    for _ in range(5):
        routed((point(), point()))
    steps["route"] = {**memory_mb(), "s": round(time.perf_counter() - t0, 1)}
    t0 = time.perf_counter()
    with ThreadPoolExecutor(WEB_THREADS) as pool:
        list(pool.map(routed, [(point(), point()) for _ in range(5 * WEB_THREADS)]))
    steps["route_threads"] = {**memory_mb(), "s": round(time.perf_counter() - t0, 1)}
    t0 = time.perf_counter()
    isochrone(reg, IsochroneParams(*point(), times=(10.0,)))
    steps["isochrone"] = {**memory_mb(), "s": round(time.perf_counter() - t0, 1)}
    t0 = time.perf_counter()
    street = dataset.search.execute("SELECT name FROM features WHERE type = 'street' LIMIT 1").fetchone()[0]
    geocode(reg, GeocodeParams(query=f"{street} 3"))
    suggest(reg, SuggestParams(q=street[:6]))
    steps["search"] = {**memory_mb(), "s": round(time.perf_counter() - t0, 1)}
    t0 = time.perf_counter()
    reverse(reg, ReverseParams(*point()))
    steps["reverse"] = {**memory_mb(), "s": round(time.perf_counter() - t0, 1)}
    manifest = dataset.manifest
    return {
        "data": data,
        "region": dataset.region,
        "counts": manifest.get("counts"),
        "memory_mb": steps,
        "load": load_average(),
    }


def child_fences(count: int, bbox: list[float], points: int, seed: int) -> dict[str, Any]:
    from bench.synthetic_search import synthetic_fences  # noqa: PLC0415
    from engine.geofence.index import FenceIndex  # noqa: PLC0415

    fences = synthetic_fences(count, bbox, seed)
    before = memory_mb()
    t0 = time.perf_counter()
    index = FenceIndex(fences)
    build_s = time.perf_counter() - t0
    built = memory_mb()
    rng = np.random.default_rng(seed + 1)
    lats = rng.uniform(bbox[1], bbox[3], points).tolist()
    lngs = rng.uniform(bbox[0], bbox[2], points).tolist()
    index.containing(lats[0], lngs[0])
    contain, near, found = [], [], 0
    for la, ln in zip(lats, lngs, strict=True):
        t = time.perf_counter()
        found += len(index.containing(la, ln))
        contain.append((time.perf_counter() - t) * 1e3)
    for la, ln in zip(lats[: points // 4], lngs[: points // 4], strict=True):
        t = time.perf_counter()
        index.check(la, ln, within_m=100.0)
        near.append((time.perf_counter() - t) * 1e3)
    return {
        "fences": count,
        "build_s": round(build_s, 2),
        "index_private_mb": round(built["private_mb"] - before["private_mb"], 1),
        "containing_ms": pct(contain),
        "fences_per_point": round(found / points, 2),
        "near100_ms": pct(near),
        "load": load_average(),
    }


def city_bbox(nodes: int) -> tuple[float, float, float, float]:
    """(min_lng, min_lat, max_lng, max_lat) of the synthetic city of ``nodes`` road nodes."""
    from bench.synthetic import DEFAULT_ORIGIN, grid_size_for  # noqa: PLC0415
    from engine.geo import EARTH_RADIUS_M  # noqa: PLC0415

    extent = (grid_size_for(nodes) - 1) * 100.0
    ky = 180.0 / (math.pi * EARTH_RADIUS_M)
    kx = ky / math.cos(math.radians(DEFAULT_ORIGIN[0]))
    lat0, lng0 = DEFAULT_ORIGIN
    return lng0, lat0, lng0 + extent * kx, lat0 + extent * ky


def run_child(args: list[str], timeout: float) -> dict[str, Any]:
    return json_child("bench.scaling_search", ["--child", *args], timeout, nice=True)


def write_layer(city: Any, path: Path) -> None:
    """The addresses the query child samples from (street, number, town, lat, lng)."""
    layer = city.search
    numbers = [layer.address(i)["addr:housenumber"] for i in range(layer.address_count)]
    np.savez(
        path,
        street=np.array(layer.street_names)[layer.addr_street],
        number=np.array(numbers),
        town=np.array([layer.town(int(d)) for d in layer.addr_district]),
        lat=layer.addr_lat,
        lng=layer.addr_lng,
    )


def measure(addresses: int, nodes: int, args: argparse.Namespace) -> dict[str, Any]:
    from bench.synthetic import generate, write_pbf  # noqa: PLC0415

    t0 = time.perf_counter()
    city = generate(nodes, args.seed, addresses=addresses)
    assert city.search is not None
    pbf = WORK / f"search-{addresses}.osm.pbf"
    write_pbf(city, pbf)
    layer = WORK / f"search-{addresses}.npz"
    write_layer(city, layer)
    row: dict[str, Any] = {
        "target_addresses": addresses,
        "addresses": city.search.address_count,
        "pois": city.search.poi_count,
        "street_names": len(city.search.street_names),
        "road_nodes": city.node_count,
        "generate_s": round(time.perf_counter() - t0, 1),
    }
    del city
    data = WORK / f"search-data-{addresses}"
    shutil.rmtree(data, ignore_errors=True)
    try:
        row["import"] = run_child(["import", str(pbf), str(data)], args.timeout)
        row["query"] = run_child(["query", str(data), str(layer), str(args.queries), str(args.seed)], args.timeout)
    except subprocess.TimeoutExpired:
        row["error"] = f"timed out after {args.timeout:.0f}s"
    except RuntimeError as exc:
        row["error"] = str(exc)[-1000:]
    if not args.keep:
        shutil.rmtree(data, ignore_errors=True)
        pbf.unlink(missing_ok=True)
        layer.unlink(missing_ok=True)
    return row


def merged(old: list[dict[str, Any]], new: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    by = {r[key]: r for r in old}
    by.update({r[key]: r for r in new})
    return [by[k] for k in sorted(by)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--addresses", default="100000,1000000")
    parser.add_argument("--nodes", type=int, default=0, help="road nodes (default: addresses / 2)")
    parser.add_argument("--fences", default="10000,100000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--keep", action="store_true", help="keep the generated datasets")
    parser.add_argument(
        "--worker-memory",
        default="",
        help="DATA_DIR of a whole synthetic region (bench.scaling --keep): a worker's memory with it loaded",
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, *rest = args.child
        if kind == "import":
            out = child_import(rest[0], rest[1])
        elif kind == "query":
            out = child_query(rest[0], rest[1], int(rest[2]), int(rest[3]))
        elif kind == "worker":
            out = child_worker(rest[0], int(rest[1]))
        else:
            out = child_fences(int(rest[0]), json.loads(rest[1]), int(rest[2]), int(rest[3]))
        print(json.dumps(out))
        return

    WORK.mkdir(parents=True, exist_ok=True)
    rows = []
    for addresses in (int(s) for s in args.addresses.split(",") if s):
        row = measure(addresses, args.nodes or addresses // 2, args)
        rows.append(row)
        print(json.dumps(row))
    fence_rows = []
    bbox = city_bbox(1_000_000)  # a 58 x 58 km city
    for count in (int(s) for s in args.fences.split(",") if s):
        try:
            r = run_child(["fences", str(count), json.dumps(list(bbox)), "4000", str(args.seed)], args.timeout)
        except (subprocess.TimeoutExpired, RuntimeError) as exc:
            r = {"fences": count, "error": str(exc)[-1000:]}
        fence_rows.append(r)
        print(json.dumps(r))
    workers = []
    if args.worker_memory:
        workers.append(run_child(["worker", args.worker_memory, str(args.seed)], args.timeout))
        print(json.dumps(workers[-1]))
    RESULTS.mkdir(parents=True, exist_ok=True)
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    report = {
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "search": merged(previous.get("search", []), rows, "target_addresses"),
        "fences": merged(previous.get("fences", []), fence_rows, "fences"),
        "worker_memory": workers or previous.get("worker_memory", []),
    }
    OUT.write_text(json.dumps(report, indent=1))
    print(f"written {OUT}")


if __name__ == "__main__":
    main()
