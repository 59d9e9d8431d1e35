"""Isochrone benchmark: Meridian next to Valhalla (/isochrone, auto costing) on the same origins.

Origins: seeded random road nodes of the well-connected network of each sample. For each origin,
5/10/15-minute contours from Meridian (``engine.services.isochrone.run``, in process) and from
Valhalla over HTTP (keep-alive). Per contour: IoU of the two polygons (in a local metric
projection), the area ratio Meridian / Valhalla, and latency p50/p95 of the whole request.

    .venv/bin/python -m bench.isochrone [--origins 30] [--regions monaco,helsinki]

Valhalla serves one region at a time (``serve.sh start <region>``); a region it does not serve
is measured for Meridian only. Results: bench/results/isochrone.json.
"""

from __future__ import annotations

import argparse
import http.client
import json
import time
from typing import Any

import numpy as np
import shapely
import shapely.geometry

from bench import peers
from bench.matching import RESULTS, load_registry
from bench.peers import start_peers
from engine.services.isochrone import IsochroneParams, run

VALHALLA = peers.VALHALLA
MINUTES = (5.0, 10.0, 15.0)


def valhalla_isochrone(conn, lat, lng, minutes):
    body = json.dumps(
        {
            "locations": [{"lat": lat, "lon": lng}],
            "costing": "auto",
            "contours": [{"time": m} for m in minutes],
            "polygons": True,
        }
    )
    conn.request("POST", "/isochrone", body=body, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = json.loads(resp.read())
    if resp.status != 200:
        return None
    return {float(f["properties"]["contour"]): shapely.geometry.shape(f["geometry"]) for f in data["features"]}


CENTRES = {"monaco": (43.7384, 7.4246), "helsinki": (60.1699, 24.9384)}


def valhalla_serves(region: str) -> bool:
    """Whether Valhalla answers a 1-minute isochrone around the region's centre (its tiles may
    hold several regions)."""
    lat, lng = CENTRES[region]
    try:
        conn = http.client.HTTPConnection(*VALHALLA, timeout=5)
        got = valhalla_isochrone(conn, lat, lng, (1.0,))
        conn.close()
    except OSError:
        return False
    return bool(got) and got[1.0].distance(shapely.Point(lng, lat)) < 0.01


def to_local(geom, net):
    def f(coords):
        x, y = net.proj.to_xy(coords[:, 1], coords[:, 0])
        return np.column_stack([x, y])

    return shapely.make_valid(shapely.transform(geom, f))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--origins", type=int, default=30)
    parser.add_argument("--regions", default="monaco,helsinki")
    parser.add_argument(
        "--start-peers",
        action="store_true",
        help="switch the peers (../shared/peers serve.sh) to each region before measuring it",
    )
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5, help="Meridian timings per origin")
    args = parser.parse_args(argv)
    regions = args.regions.split(",")
    reg = load_registry(regions)
    report: dict = {"minutes": MINUTES, "regions": {}}
    print(
        f"{'region':9} {'contour':>7} {'IoU mean':>8} {'IoU p50':>8} {'IoU min':>8} "
        f"{'area M/V':>8}   latency p50/p95 ms: meridian | valhalla"
    )
    for region in regions:
        if args.start_peers:
            start_peers(region)
        served = valhalla_serves(region)
        comp = reg.require(region).component("roadnet")
        net, graph = comp.network, comp.graph
        big = np.flatnonzero(graph.component_size[graph.node_component] == graph.component_size.max())
        rng = np.random.default_rng(args.seed)
        nodes = rng.choice(big, size=min(args.origins, big.size), replace=False)
        conn = http.client.HTTPConnection(*VALHALLA, timeout=30) if served else None
        run(
            reg, IsochroneParams(float(graph.node_lat[nodes[0]]), float(graph.node_lng[nodes[0]]), times=MINUTES)
        )  # warm-up
        mer_ms, val_ms = [], []
        iou: dict[float, list[float]] = {m: [] for m in MINUTES}
        ratio: dict[float, list[float]] = {m: [] for m in MINUTES}
        for node in nodes:
            lat, lng = float(graph.node_lat[node]), float(graph.node_lng[node])
            params = IsochroneParams(lat, lng, times=MINUTES)
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                res = run(reg, params)
                mer_ms.append((time.perf_counter() - t0) * 1e3)
            if conn is None:
                continue
            t0 = time.perf_counter()
            val = valhalla_isochrone(conn, lat, lng, MINUTES)
            val_ms.append((time.perf_counter() - t0) * 1e3)
            if not val:
                continue
            for f in res["features"]:
                m = f["properties"]["contour"]
                a = to_local(shapely.geometry.shape(f["geometry"]), net)
                b = to_local(val[m], net) if m in val else None
                if b is None or b.is_empty:
                    continue
                union = a.union(b).area
                iou[m].append(a.intersection(b).area / union if union else 0.0)
                ratio[m].append(a.area / b.area)
        if conn is not None:
            conn.close()
        out: dict[str, Any] = {
            "origins": len(nodes),
            "meridian_ms": {
                "p50": round(float(np.percentile(mer_ms, 50)), 2),
                "p95": round(float(np.percentile(mer_ms, 95)), 2),
                "min": round(float(np.min(mer_ms)), 2),
            },
        }
        if val_ms:
            out["valhalla_ms"] = {
                "p50": round(float(np.percentile(val_ms, 50)), 2),
                "p95": round(float(np.percentile(val_ms, 95)), 2),
            }
        for m in MINUTES:
            if iou[m]:
                out[f"{m:g}min"] = {
                    "iou_mean": round(float(np.mean(iou[m])), 3),
                    "iou_p50": round(float(np.median(iou[m])), 3),
                    "iou_min": round(float(np.min(iou[m])), 3),
                    "area_ratio_p50": round(float(np.median(ratio[m])), 3),
                }
        report["regions"][region] = out
        lat_txt = f"{out['meridian_ms']['p50']:.1f}/{out['meridian_ms']['p95']:.1f}"
        if val_ms:
            lat_txt += f" | {out['valhalla_ms']['p50']:.1f}/{out['valhalla_ms']['p95']:.1f}"
        for m in MINUTES:
            s = out.get(f"{m:g}min")
            if s:
                print(
                    f"{region:9} {m:>7g} {s['iou_mean']:>8.3f} {s['iou_p50']:>8.3f} "
                    f"{s['iou_min']:>8.3f} {s['area_ratio_p50']:>8.3f}   {lat_txt}"
                )
        if not any(out.get(f"{m:g}min") for m in MINUTES):
            print(f"{region:9} {'-':>7} {'(no Valhalla for this region)':>35}   {lat_txt}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "isochrone.json"
    path.write_text(json.dumps(report, indent=1))
    print(f"written {path}")


if __name__ == "__main__":
    main()
