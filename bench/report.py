"""Writes docs/benchmarks.md from the routing, throughput, map matching, scaling, load, matrix and
optimisation results in bench/results/; a section of the current file that no result file writes
(a one-off measurement written by hand) is kept, after the generated ones.

The tables are only as fresh as the JSON: each section names the command that rewrites its
file. Re-run the benchmarks, then this:

    .venv/bin/python -m bench.report
"""

from __future__ import annotations

import json

from bench.country import size_key
from bench.load_report import quota_summary
from bench.plots import load_figure, scaling_figure, search_scaling_figure
from config.settings import PROJECT_ROOT

RESULTS = PROJECT_ROOT / "bench" / "results"
OUT = PROJECT_ROOT / "docs" / "benchmarks.md"

ROUTING_CMD = (
    "PEERS_DIR=... .venv/bin/python -m bench.routing --regions monaco,helsinki --pairs 1000 --serve --start-peers"
)
THROUGHPUT_CMD = "PEERS_DIR=... .venv/bin/python -m bench.throughput --start-peers"
MIX_CMD = THROUGHPUT_CMD + " --mix --rounds 2"
MATCHING_CMD = "PEERS_DIR=... .venv/bin/python -m bench.matching --start-peers"
SCALING_CMD = ".venv/bin/python -m bench.scaling --sizes 10000,100000,1000000 --pairs 200"
LOAD_CMD = ".venv/bin/python -m bench.load --data-dir DIR --hold 300"
SEARCH_SCALING_CMD = ".venv/bin/python -m bench.scaling_search --addresses 100000,1000000,5000000 --fences 10000,100000"
COUNTRY_CMD = "PEERS_DIR=... .venv/bin/python -m bench.country --nodes 100000,1000000 --osrm"
WORKER_MEMORY_CMD = ".venv/bin/python -m bench.scaling_search --addresses '' --fences '' --worker-memory DATA_DIR"


def _load(name: str) -> dict | None:
    path = RESULTS / name
    return json.loads(path.read_text()) if path.exists() else None


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("" if c is None else str(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _us(stats: dict | None, key: str) -> str:
    return "" if not stats or stats.get(key) is None else f"{stats[key]:.0f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "" if not a or not b else f"{a / b:.2f}x"


def routing_section(doc: dict) -> list[str]:
    lines = [
        "## Routing",
        "",
        f"`{doc.get('command', ROUTING_CMD)}`, run {doc.get('when', '?')} "
        f"on {doc.get('cpus', '?')} cores (load average {doc.get('load_average', ['?'])[0]:.2f}"
        " at the end). Latencies in µs, sequential keep-alive client, the engines taking "
        "turns every 50 pairs. Meridian over HTTP: `/v1/routing` under its own gunicorn "
        "(2 workers), key check and quota included. The HTTP client is Python's http.client "
        "in the benchmark's own process; it adds more to Meridian's answers than to OSRM's, "
        "so the wrk table below is the fair comparison of the servers.",
        "",
    ]
    for r in doc["results"]:
        mer, http, osrm, val = (r.get(k) or {} for k in ("meridian_inprocess", "meridian_http", "osrm", "valhalla"))
        agr = r.get("agreement_vs_osrm") or {}
        lines += [
            f"### {r['region'].title()} ({r['pairs']} seeded random pairs; "
            f"graph {r['graph']['nodes']} nodes, {r['graph']['edges']} edges, CH core {r['graph'].get('ch_core', 0)})",
            "",
        ]
        lines += _table(
            ["", "p50", "p95", "p50 with steps", "p95 with steps", "no route"],
            [
                [
                    "Meridian in process",
                    _us(mer, "p50_us"),
                    _us(mer, "p95_us"),
                    _us(mer, "p50_steps_us"),
                    _us(mer, "p95_steps_us"),
                    mer.get("no_route"),
                ],
                [
                    "Meridian over HTTP",
                    _us(http, "p50_us"),
                    _us(http, "p95_us"),
                    _us(http, "p50_steps_us"),
                    _us(http, "p95_steps_us"),
                    http.get("no_route"),
                ],
                [
                    "OSRM over HTTP",
                    _us(osrm, "p50_us"),
                    _us(osrm, "p95_us"),
                    _us(osrm, "p50_steps_us"),
                    _us(osrm, "p95_steps_us"),
                    osrm.get("no_route"),
                ],
                [
                    "Valhalla over HTTP",
                    _us(val, "p50_us"),
                    _us(val, "p95_us"),
                    _us(val, "p50_steps_us"),
                    _us(val, "p95_steps_us"),
                    val.get("no_route"),
                ],
            ],
        )
        lines += [
            f"Over HTTP with steps, Meridian p50 / OSRM p50 = "
            f"{_ratio(http.get('p50_steps_us'), osrm.get('p50_steps_us'))}, / Valhalla p50 = "
            f"{_ratio(http.get('p50_steps_us'), val.get('p50_steps_us'))}.",
            "",
        ]
        if agr:
            lines += [
                f"Agreement with OSRM on {agr['compared']} pairs: distance within 5 % "
                f"{agr['distance_within_5pct']:.1%}, within 10 % {agr['distance_within_10pct']:.1%}; "
                f"duration within 5 % {agr['duration_within_5pct']:.1%}, within 10 % "
                f"{agr['duration_within_10pct']:.1%}; median ratios {agr['median_distance_ratio']} "
                f"(distance), {agr['median_duration_ratio']} (duration). Largest distance "
                "differences (Meridian / OSRM):",
                "",
            ]
            verdicts = {
                (tuple(v["origin"]), tuple(v["destination"])): v for v in (agr.get("outliers") or {}).get("pairs", [])
            }
            lines += _table(
                ["origin", "destination", "metres", "seconds", "OSRM driving our path"],
                [
                    [
                        f"{w['origin'][0]},{w['origin'][1]}",
                        f"{w['destination'][0]},{w['destination'][1]}",
                        f"{w['meridian_m']:.0f} / {w['osrm_m']:.0f}",
                        f"{w['meridian_s']:.0f} / {w['osrm_s']:.0f}",
                        _verdict(verdicts.get((tuple(w["origin"]), tuple(w["destination"])))),
                    ]
                    for w in agr.get("worst", [])[:5]
                ],
            )
            lines += _outliers(agr.get("outliers"))
    return lines


def _verdict(v: dict | None) -> str:
    if v is None:
        return ""
    ratio = v.get("osrm_time_ratio")
    return v["class"].replace("_", " ") + (f" (its time for ours / its own: {ratio})" if ratio is not None else "")


def _outliers(out: dict | None) -> list[str]:
    if not out:
        return []
    counts = ", ".join(f"{c.replace('_', ' ')} {n}" for c, n in out["counts"].items())
    lines = [
        "",
        f"All {out['outside_5pct']} pairs outside 5 %, with OSRM asked to drive Meridian's own "
        f"path (`bench/outliers.py`, whose docstring defines the classes): {counts}.",
    ]
    slower = out["counts"].get("osrm_rates_ours_slower", 0)
    if slower and "slower_only_by_osrm_uturns" in out:
        lines.append(
            f"Of the {slower} that OSRM rates slower, {out['slower_only_by_osrm_uturns']} are so only "
            "because OSRM charges a U-turn (its 20 s penalty plus a sharp turn) on a stretch where our "
            "path makes none: one-way pieces of one street that OSRM's guidance merges into a divided "
            "road; without those charges OSRM's own prices put our path within 5 % of its route."
        )
    located = [v for v in out["pairs"] if v.get("where")]
    if located:
        lines += ["", "Where OSRM's price for our path differs most from ours (the largest gap per pair):", ""]
        lines += _table(
            [
                "origin",
                "destination",
                "OSRM for ours / its own (s)",
                "without its U-turns",
                "street",
                "at",
                "metres",
                "OSRM s / ours",
            ],
            [
                [
                    f"{v['origin'][0]},{v['origin'][1]}",
                    f"{v['destination'][0]},{v['destination'][1]}",
                    f"{v['osrm_s_for_ours']} / {v['osrm_s']}",
                    v["osrm_s_for_ours_without_its_uturns"],
                    w["street"],
                    f"{w['at'][0]},{w['at'][1]}",
                    w["metres"],
                    f"{w['osrm_s']} / {w['ours_s']}" + (" (OSRM U-turn)" if w["osrm_uturn"] else ""),
                ]
                for v in located
                for w in v["where"][:1]
            ],
        )
    return [*lines, ""]


def throughput_section(doc: dict) -> list[str]:
    single = doc["connections"] == 1
    title = "Routing latency of the servers alone (wrk, one connection)" if single else "Routing throughput"
    command = doc.get("command") or THROUGHPUT_CMD + (
        " --connections 1 --seconds 6 --rounds 3 --out bench/results/latency-wrk.json" if single else ""
    )
    lines = [
        f"## {title}",
        "",
        f"`{command}`, run {doc['when']}: `wrk`, "
        f"{doc['connections']} connection{'s' if doc['connections'] != 1 else ''} for {doc['seconds']} s per row, cycling through the same "
        f"seeded pairs; Meridian with {doc['meridian_workers']} gunicorn workers. Non-2xx are "
        "answers without a route."
        + (
            " A lean C client: this is the fair ratio to OSRM (the Python "
            "client above adds more to Meridian's answers than to OSRM's)."
            if single
            else ""
        ),
        "",
    ]
    rounds = doc.get("rounds", 1)
    if rounds > 1:
        lines += [f"{rounds} rounds, the engines taking turns; the medians of the rounds, and each round's p50.", ""]
    rows = [
        [
            r["region"],
            r["engine"],
            "yes" if r["steps"] else "no",
            f"{r['requests_per_s']:.0f}",
            r["p50_ms"],
            *([" / ".join(str(x) for x in r.get("p50_ms_rounds", []))] if rounds > 1 else []),
            r["non_2xx"],
        ]
        for r in doc["results"]
    ]
    lines += _table(
        ["region", "engine", "steps", "requests/s", "p50 ms", *(["p50 ms per round"] if rounds > 1 else []), "non-2xx"],
        rows,
    )
    if single:
        lines += [_steps_ratios(doc["results"]), ""]
    return lines


def mix_section(doc: dict) -> list[str]:
    """``bench.throughput --mix``: route with steps and the lookup mix, Meridian next to OSRM CH."""
    load = doc.get("load_average") or {}
    lines = [
        "## Lookup mix and route throughput next to OSRM CH",
        "",
        f"`{doc.get('command') or MIX_CMD}`, run {doc['when']} on {doc.get('cpus', '?')} cores "
        f"(load average {', '.join(str(x) for x in load.get('start', []))} at the start, "
        f"{', '.join(str(x) for x in load.get('end', []))} at the end): `wrk`, {doc['seconds']} s per row "
        f"and engine, {doc['rounds']} round(s), the engines taking turns; the medians of the rounds. "
        f"Meridian under its own gunicorn ({doc['meridian_workers']} workers), key check and quota "
        "included. `mix`: Meridian cycles through geocoding, reverse geocoding, suggest and route "
        "with steps (one of each in turn, the quality sets' queries), OSRM through the part it has "
        "(the same routes, and `/nearest` at the reverse-geocoding points); region `both` is "
        "Meridian's mix of both samples. Non-2xx counts every answer that is not 2xx (a geocoding "
        "query may answer 404), 5xx the failures. `/ OSRM`: Meridian's requests/s and p50 over "
        "OSRM's in the same row.",
        "",
    ]
    by = {(r["region"], r["kind"], r["connections"], r["engine"]): r for r in doc["results"]}
    rows = []
    for r in doc["results"]:
        osrm = by.get((r["region"], r["kind"], r["connections"], "osrm"))
        versus = osrm if osrm is not None and r["engine"] != "osrm" else {}
        rows.append(
            [
                r["region"],
                r["kind"],
                r["connections"],
                r["engine"],
                f"{r['requests_per_s']:.0f}",
                _ratio(r["requests_per_s"], versus.get("requests_per_s")),
                r["p50_ms"],
                _ratio(r["p50_ms"], versus.get("p50_ms")),
                r["p99_ms"],
                r["non_2xx"],
                r["status_5xx"],
            ]
        )
    return lines + _table(
        [
            "region",
            "load",
            "connections",
            "engine",
            "requests/s",
            "/ OSRM",
            "p50 ms",
            "/ OSRM",
            "p99 ms",
            "non-2xx",
            "5xx",
        ],
        rows,
    )


def _steps_ratios(results: list[dict]) -> str:
    """Meridian's p50 with steps over OSRM's and Valhalla's, per region."""
    p50 = {(r["region"], r["engine"]): r["p50_ms"] for r in results if r["steps"]}
    regions = dict.fromkeys(region for region, _ in p50)
    return (
        "With steps, Meridian p50 / OSRM p50: "
        + ", ".join(
            f"{region} {_ratio(p50.get((region, 'meridian')), p50.get((region, 'osrm')))}" for region in regions
        )
        + "; / Valhalla p50: "
        + ", ".join(
            f"{region} {_ratio(p50.get((region, 'meridian')), p50.get((region, 'valhalla')))}" for region in regions
        )
        + "."
    )


def matching_section(doc: dict) -> list[str]:
    lines = [
        "## Map matching (snap to road)",
        "",
        f"`{MATCHING_CMD}`: synthetic traces sampled "
        'every 100 m along true routes with Gaussian noise; "on path" is the share of points '
        "snapped within 2 m of the true path. Meridian in process, OSRM `/match` over HTTP.",
        "",
    ]
    rows = []
    for region, sigmas in doc["regions"].items():
        for sigma, engines in sigmas.items():
            for name, m in engines.items():
                rows.append(
                    [
                        region,
                        sigma.replace("sigma_", "σ = ") + " m",
                        name,
                        m["points_per_trace"],
                        f"{m['on_path']:.1%}",
                        m["mean_dist_m"],
                        m["p50_ms"],
                        m["p95_ms"],
                    ]
                )
    return lines + _table(
        ["region", "noise", "engine", "points/trace", "on path", "mean dist m", "p50 ms", "p95 ms"], rows
    )


def scaling_section(doc: dict) -> list[str]:
    lines = [
        "## Scaling curve (synthetic grid cities)",
        "",
        f"`{SCALING_CMD}`: `bench/synthetic.py` "
        "cities (one-ways, three road classes, signals, turn restrictions) imported with every "
        "stage; queries in process between random nodes. The import budget is 10 minutes on "
        "this 2-core machine.",
        "",
    ]
    rows = []
    for r in doc.get("import_and_services", []):
        if "error" in r:
            rows.append([r["osm_nodes"], "", r["error"], "", "", "", "", "", ""])
            continue
        imp, q = r["import"], r["query"]
        ch = q.get("ch") or {}
        route = q.get("route_ms") or {}
        rows.append(
            [
                r["osm_nodes"],
                ch.get("ch_nodes", ""),
                imp["seconds"],
                ch.get("seconds", ""),
                ch.get("core", ""),
                imp["peak_rss_mb"],
                f"{route.get('p50')} / {route.get('p95')}",
                (q.get("snap_ms") or {}).get("p50"),
                (q.get("iso10_ms") or {}).get("p50"),
            ]
        )
    lines += _table(
        [
            "OSM nodes",
            "CH nodes",
            "import s",
            "of which CH s",
            "CH core",
            "peak MB",
            "route p50 / p95 ms",
            "snap p50 ms",
            "isochrone 10 min p50 ms",
        ],
        rows,
    )
    figure = scaling_figure(doc, OUT.parent / "scaling.png")
    return lines + ([f"![Scaling curve: import time, memory and route latency]({figure.name})", ""] if figure else [])


def load_section(doc: dict) -> list[str]:
    hold = doc["hold"]
    lines = [
        "## Sustained load with faults",
        "",
        f"`{LOAD_CMD}`: a full deployment of its own (gunicorn, the Procfile's workers, Redis with its "
        "append-only file, PostgreSQL from initdb), the mix of `bench/load_mix.py` (locust), "
        f"saturation {doc['saturation']['rps']} req/s, held at {hold['target_rps']} req/s for {hold['seconds']} s "
        f"(measured {hold['measured_rps']} req/s). Latencies of the 2xx; 503+RA = 503 with Retry-After "
        "(back-pressure or a dependency down).",
        "",
    ]
    rows = [
        [r["function"], r["requests"], r["p50_ms"], r["p95_ms"], r["p99_ms"], r["5xx"], r["clean_503"], r["status"]]
        for r in doc["functions"]
    ]
    lines += _table(["function", "requests", "p50 ms", "p95 ms", "p99 ms", "5xx", "503+RA", "statuses"], rows)
    faults = [
        [f["fault"], f["at_s"], f["failed"], f.get("clean_503", 0), f["recovery_s"], f.get("note", "")]
        for f in doc["faults"]
    ]
    lines += _table(["fault", "at s", "failed", "503+RA", "recovery s", "what happened"], faults)
    jobs = doc["jobs"]
    lines += [
        f"Jobs: {jobs['accepted']} accepted (202), states {jobs['states']}, **lost {jobs['lost']}**, "
        f"duplicated {jobs['duplicated']}.",
        "",
    ]
    lines += [f"- Quota, key `{name}`: {quota_summary(q)}." for name, q in doc["quota"].items()]
    figure = load_figure(doc, OUT.parent / "load.png")
    return lines + [""] + ([f"![Throughput and p95 over the hold, faults marked]({figure.name})", ""] if figure else [])


def _p(stats: dict | None, scale: float = 1.0, unit: str = "") -> str:
    if not stats:
        return ""
    return f"{stats['p50'] * scale:.2f} / {stats['p95'] * scale:.1f}{unit}"


WORKER_STEPS = (
    ("start", "start"),
    ("route", "5 routes"),
    ("route_threads", "+ 20 routes on 4 threads"),
    ("isochrone", "+ isochrone"),
    ("search", "+ geocode, suggest"),
    ("reverse", "+ reverse"),
)


def _anon_file(memory: dict | None) -> str:
    """Anonymous / file-backed MB of one step, or a dash for a step the run did not have."""
    return f"{memory['anon_mb']:,.0f} / {memory['file_mb']:,.0f}" if memory else "—"


def worker_memory_lines(workers: list[dict]) -> list[str]:
    """A web worker's memory with a whole region loaded, after each kind of request."""
    if not workers:
        return []
    lines = [
        f"A web worker with a whole synthetic region loaded (every stage imported; `{WORKER_MEMORY_CMD}`): "
        "memory of one fresh process after each kind of request, anonymous (its own) / file-backed "
        "(the memory-mapped dataset, shared by every worker of a node) MB:",
        "",
    ]
    rows = []
    for w in workers:
        counts = w.get("counts") or {}
        region = f"{counts.get('road_nodes', 0):,} graph nodes, {counts.get('addresses', 0):,} addresses"
        mem = w["memory_mb"]
        rows.append([region] + [_anon_file(mem.get(k)) for k, _ in WORKER_STEPS])
    return lines + _table(["region", *[label for _, label in WORKER_STEPS]], rows)


def search_scaling_section(doc: dict) -> list[str]:
    lines = [
        "## Search and geofencing at scale (synthetic cities with addresses)",
        "",
        f"`{SEARCH_SCALING_CMD}`: `bench/synthetic_search.py` adds to a synthetic city (road nodes = "
        "addresses / 2) house numbers on both sides of every street, POIs of 14 categories, towns "
        "as admin boundaries and street names drawn from a pool of 3,000 + addresses / 100 names "
        "reused across districts. The import runs the `admin` and `search` stages; queries run in "
        "a fresh process (as a web worker) through `engine.services`. Worker memory: that process's "
        "/proc/self/smaps_rollup after the queries, anonymous (heap and arrays built in the process: "
        "what every gunicorn worker pays) / file-backed (the memory-mapped dataset: one copy in the "
        "page cache for all workers). hit: the first result is the address "
        "asked for (suggest: its street). load: the machine's 1-minute load average (2 cores, "
        "shared with other jobs): absolute times are inflated by it.",
        "",
    ]
    rows = []
    for r in doc.get("search", []):
        if "error" in r:
            rows.append([f"{r['addresses']:,}", "", r["error"][-200:]] + [""] * 10)
            continue
        imp, q = r["import"], r["query"]
        mem = q["memory_after_mb"]
        rows.append(
            [
                f"{r['addresses']:,}",
                f"{imp['search_s']:.0f}",
                f"{imp['peak_rss_mb']:,.0f}",
                f"{imp['search_db_mb']:,.0f}",
                f"{_p(q['geocode_ms'])} ({q['geocode_hit']:.0%})",
                f"{_p(q['geocode_typo_ms'])} ({q['geocode_typo_hit']:.0%})",
                f"{_p(q['suggest_ms'])} ({q['suggest_hit']:.0%})",
                f"{_p(q['reverse_ms'])} ({q['reverse_hit']:.0%})",
                f"{q['reverse_first_ms'] / 1000:.1f}",
                f"{mem.get('anon_mb', mem['private_mb']):.0f} / {mem.get('file_mb', mem['shared_mb']):.0f}",
                f"{q['search_private_mb']:.0f}",
                f"{imp['load']} / {q['load']}",
            ]
        )
    lines += _table(
        [
            "addresses",
            "search import s",
            "import peak MB",
            "search.sqlite MB",
            "geocode p50 / p95 ms (hit)",
            "geocode with a typo",
            "suggest",
            "reverse",
            "first reverse s",
            "worker anonymous / file-backed MB",
            "private MB to open",
            "load (import / queries)",
        ],
        rows,
    )
    fences = [
        [
            f"{r['fences']:,}",
            r.get("build_s", ""),
            r.get("index_private_mb", ""),
            _p(r.get("containing_ms"), 1000.0),
            _p(r.get("near100_ms"), 1000.0),
            r.get("fences_per_point", ""),
            r.get("load", r.get("error", "")),
        ]
        for r in doc.get("fences", [])
    ]
    lines += [
        "Geofences of one account (half circles, half polygons of 6-40 vertices, 10-75 m radius) over "
        "a 58 x 58 km city, `engine.geofence.index.FenceIndex` in process, 4,000 random points:",
        "",
    ]
    lines += _table(
        [
            "fences",
            "build s",
            "private MB",
            "containing p50 / p95 µs",
            "check within 100 m µs",
            "fences/point",
            "load",
        ],
        fences,
    )
    lines += [
        "The vocabulary's typo tables (engine/search/vocabulary.py) are written into search.sqlite by "
        "the import and read with SQL. Before, every process built them in Python dicts when it "
        "opened the index: for a vocabulary of 100,000 words (a large country's street-name words) "
        "that cost each worker 1,193 MB of private memory and 35.5 s (12 s CPU) at start-up; reading "
        "them from the file costs 12 MB and no start-up time, and writing them 36 s (12.6 s CPU) of "
        "the import and 138 MB of search.sqlite (973,548 delete rows, 4,046,379 prefix rows) "
        "(one-off measurement, load average ~10).",
        "",
    ]
    lines += worker_memory_lines(doc.get("worker_memory", []))
    figure = search_scaling_figure(doc, OUT.parent / "scaling-search.png")
    return lines + ([f"![Search scaling: import, latency, worker memory]({figure.name})", ""] if figure else [])


def routing_pairs_section(doc: dict) -> list[str]:
    """Agreement with OSRM on the independent pairs of bench/make_queries.py, and why the pairs
    outside 5 % differ (bench/outliers.py), next to the run before issue 20's routing work."""
    before = {r["region"]: r for r in (_load("routing-pairs-before.json") or {}).get("results", [])}
    lines = [
        "## Routing: independent pairs, agreement with OSRM",
        "",
        f"`{doc.get('command', '?')}`, run {doc.get('when', '?')}. Pairs of road nodes read from the PBF "
        "(`bench/data/<region>-routes.json`): `random` (1000) and `near_edge` (300, one end near the "
        "extract's border). Agreement over the random pairs; the classes are `bench/outliers.py`'s, "
        "`routing-pairs-before.json` is the same run before the changes of issue 20 item 2.",
        "",
    ]
    rows = []
    for r in doc["results"]:
        agr, old = r.get("agreement_vs_osrm") or {}, (before.get(r["region"]) or {}).get("agreement_vs_osrm") or {}
        if not agr:
            continue
        out = agr["outliers"]
        no_route = sum(k.get("peers_route_meridian_not", 0) for k in r.get("by_kind", {}).values())
        rows.append(
            [
                r["region"].title(),
                f"{old.get('distance_within_5pct', float('nan')):.3f} → {agr['distance_within_5pct']:.3f}",
                f"{old.get('duration_within_5pct', float('nan')):.3f} → {agr['duration_within_5pct']:.3f}",
                no_route,
                ", ".join(f"{k} {v}" for k, v in out["counts"].items() if v),
                f"{out.get('osrm_moved_a_point_valhalla_agrees_with_us', 0)} / {out['osrm_moved_a_point_over_100m']}",
            ]
        )
    lines += _table(
        [
            "region",
            "distance within 5 %",
            "duration within 5 %",
            "404 where both peers route",
            "pairs outside 5 % by class",
            "OSRM moved a point: Valhalla within 5 % of us",
        ],
        rows,
    )
    return lines


HEAVY_ROWS = (
    ("iso_first", "isochrone, through the queue, uncached"),
    ("valhalla", "Valhalla /isochrone, same origins and contours"),
    ("iso_cached", "isochrone, cached"),
    ("map_first", "static map 600x400 z15, through the queue, uncached"),
    ("map_cached", "static map, cached"),
    ("geom_first", "geometry download, uncached"),
    ("geom_cached", "geometry download, cached"),
)


def heavy_section(doc: dict) -> list[str]:
    """bench.heavy: the queued functions next to Valhalla's isochrone, one run each before and after
    (``heavy-before.json``, when kept, is the same program on the tree before a change)."""
    before = _load("heavy-before.json") or {}
    minutes = "+".join(f"{m:g}" for m in doc.get("minutes", []))
    lines = [
        "## Heavy functions through the queue",
        "",
        f"`{doc['command']}`, run {doc['run_at']} at {doc.get('commit', '?')} on {doc.get('cores')} cores "
        f"(load average {doc.get('load_start')} at the start, {doc.get('load_end')} at the end): gunicorn (2 "
        "workers) -> Redis -> a Celery worker of 2 processes, one keep-alive client per server, independent "
        f"seeded road nodes as origins ({doc.get('n')} per region), isochrone contours {minutes} min; per origin "
        "the requests take turns, so compare the ratios of one run. Targets (issue 31): isochrone uncached "
        "<= 0.5x Valhalla's p50; static map uncached p50 <= 30 ms, cached <= 2 ms.",
        "",
    ]
    if before:
        lines += [
            f"Before: `{before['command']}` at {before.get('commit', '?')}, run {before['run_at']} (load average "
            f"{before.get('load_start')} -> {before.get('load_end')}).",
            "",
        ]
    for region, rows in doc["regions"].items():
        old = (before.get("regions") or {}).get(region, {})
        header = ["p50 / p99 ms", "before", "after"] if old else ["p50 / p99 ms", "measured"]
        table = []
        for key, label in HEAVY_ROWS:
            if key not in rows:
                continue
            cells = [f"{s['p50_ms']:.1f} / {s['p99_ms']:.1f}" if s else "" for s in (old.get(key), rows[key])]
            table.append([label, *(cells if old else cells[1:])])
        ratio = [
            "isochrone p50 / Valhalla p50",
            *([f"{old['iso_over_valhalla_p50']:.2f}x" if "iso_over_valhalla_p50" in old else ""] if old else []),
            f"{rows['iso_over_valhalla_p50']:.2f}x" if "iso_over_valhalla_p50" in rows else "",
        ]
        lines += [f"### {region.capitalize()}", "", *_table(header, [*table, ratio])]
    return lines


def travel_profiles_section(doc: dict) -> list[str]:
    """Cost of the foot and bicycle profiles: import and process memory, car alone vs all three."""
    lines = [
        "## Travel profiles: car alone vs car + foot + bicycle",
        "",
        f"{doc['what']}. {doc['machine_note']}.",
        "",
        "| region | profiles | import wall s | roads stage s | import peak RSS MiB | dataset MB | graphs MB |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in doc["imports"]:
        lines.append(
            f"| {r['region']} | {r['profiles']} | {r['wall_s']} | {r['roads_stage_s']} | {r['peak_rss_mib']} "
            f"| {r['dataset_mb']} | {r['graph_mb']} |"
        )
    lines += [
        "",
        "A fresh process holding the dataset, every component warmed, each service run once (MiB):",
        "",
        "| region | profiles | RSS | private (USS) | anonymous |",
        "|---|---|---|---|---|",
    ]
    for m in doc["process_memory_mib"]:
        lines.append(f"| {m['region']} | {m['profiles']} | {m['rss']} | {m['private']} | {m['anonymous']} |")
    return lines + [""]


def _agreement_cell(row: dict, old: dict | None, key: str) -> str:
    new = (row.get(key) or {}).get("within_10pct")
    before = ((old or {}).get(key) or {}).get("within_10pct")
    text = "" if new is None else f"{new:.3f}"
    return f"{before:.3f} → {text}" if before is not None and old is not None else text


def profiles_agreement_section(doc: dict) -> list[str]:
    """Foot and bicycle against Valhalla and OSRM (bench/profiles_agreement.py), next to the run
    before the profile changes (``profiles-agreement-before.json``), and the foot speed table."""
    before = {(r["region"], r["profile"]): r for r in (_load("profiles-agreement-before.json") or {}).get("rows", [])}
    lines = [
        "## Travel profiles: agreement with Valhalla and OSRM",
        "",
        f"`{doc.get('command', '?')}`, run {doc.get('when', '?')}. Share of the pairs both engines route whose "
        "distances are within 10 % (before → after the bicycle rule changes of issue 29; "
        "`profiles-agreement-before.json`). Pairs: seeded random nodes of the PBF's ways of the profile's "
        "classes (not underground), the same coordinates sent to every engine; OSRM built with its own "
        "`foot.lua` / `bicycle.lua`, Valhalla's `pedestrian` / `bicycle` costing.",
        "",
    ]
    rows = []
    for r in doc["rows"]:
        old = before.get((r["region"], r["profile"]))
        rows.append(
            [
                r["region"].title(),
                r["profile"],
                r["pairs"],
                _agreement_cell(r, old, "meridian_vs_valhalla"),
                _agreement_cell(r, old, "meridian_vs_osrm"),
                _agreement_cell(r, None, "osrm_vs_valhalla"),
                f"{r['meridian_404_osrm_routes']} / {r['meridian_404_valhalla_routes']}",
                r.get("peers_agree_meridian_not", ""),
            ]
        )
    lines += _table(
        [
            "region",
            "profile",
            "pairs",
            "vs Valhalla",
            "vs OSRM",
            "OSRM vs Valhalla",
            "404 where OSRM / Valhalla route",
            "peers agree, Meridian with neither",
        ],
        rows,
    )
    lines += [
        "Why the rest differ, from the outliers (`rows[].outliers` in the JSON, ways compared by OSM id):",
        "",
        "- Bicycle against Valhalla: Valhalla's `bicycle` costing never pushes a bicycle (not along a footway, "
        "not against a one-way, not up steps), rides `bicycle=use_sidepath` roads and weighs roads by "
        "its own cycling preferences; OSRM and Meridian push and take the fastest way, so the two peers "
        "agree on only about 60 % of the pairs and Meridian sits between them.",
        "- The 404s where Valhalla routes (Monaco, bicycle): points in the A8 motorway's service area "
        "(158 edges reached only by the motorway); OSRM answers NoRoute as well, Valhalla snaps the "
        "points 80 m away to the road outside the fence.",
        "- Foot: Meridian crosses pedestrian squares straight (issue 29's rule, OSRM's `foot_area.lua`); "
        "the peers walk round their outlines. OSRM also walks railway platforms mapped without a "
        "`highway` tag (Helsinki's central station), which Meridian and Valhalla do not.",
        "",
    ]
    if doc.get("speed"):
        lines += [
            f"Foot speed in the same run (load average {doc['load_average'][0]:.1f} on the 2 shared cores at the "
            "end: compare ratios). Routes: `/v1/routing?profile=foot&steps=true` on the benchmark's own gunicorn "
            "(2 workers, key check and quota included) and Valhalla's `pedestrian` route with maneuvers, one "
            "keep-alive client each, taking turns every 25 pairs after one warm-up pass over all pairs. "
            "Isochrones: a 10-minute contour from the first 20 pairs' origins; Meridian in process "
            "(`engine.services.isochrone.run`), Valhalla's `/isochrone` over HTTP; areas in a local metric "
            "projection.",
            "",
        ]
    for s in doc.get("speed", []):
        rt, iso = s["route"], s["isochrone_10min"]
        lines += [
            f"### Foot speed, {s['region'].title()}",
            "",
            *_table(
                ["measure", "Meridian", "Valhalla", "ratio"],
                [
                    [
                        f"foot route with steps over HTTP, p50 / p95 ms ({rt['pairs']} pairs)",
                        f"{rt['meridian_ms']['p50']} / {rt['meridian_ms']['p95']}",
                        f"{rt['valhalla_ms']['p50']} / {rt['valhalla_ms']['p95']}",
                        f"{rt['p50_over_valhalla']:.2f}x",
                    ],
                    [
                        f"10-minute walking isochrone area, median ratio (p10-p90), {iso['compared']} origins",
                        "",
                        "",
                        f"{iso['area_ratio_median']} ({iso['area_ratio_p10_p90'][0]}-{iso['area_ratio_p10_p90'][1]})",
                    ],
                    [
                        "10-minute isochrone latency p50 / p95 ms: foot (car) in process; Valhalla over HTTP",
                        f"{iso['foot_ms']['p50']} / {iso['foot_ms']['p95']} "
                        f"({iso['car_ms']['p50']} / {iso['car_ms']['p95']})",
                        f"{iso['valhalla_ms']['p50']} / {iso['valhalla_ms']['p95']}",
                        "",
                    ],
                ],
            ),
        ]
    return lines


MATRIX_ROWS = (
    ("in_process_p50_ms", "Meridian in process"),
    ("meridian_p50_ms", "Meridian `POST /v1/matrix`"),
    ("osrm_p50_ms", "OSRM CH `/table`"),
    ("valhalla_p50_ms", "Valhalla `/sources_to_targets`"),
)


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def matrix_section(doc: dict) -> list[str]:
    """bench.matrix: N x N car matrices over HTTP next to OSRM CH and Valhalla, the agreement
    with OSRM, and Meridian before a change (``matrix-before.json``, when kept)."""
    before = {(r["region"], r["n"]): r for r in (_load("matrix-before.json") or {}).get("results", [])}
    lines = [
        "## Matrix (many-to-many CH) next to OSRM and Valhalla",
        "",
        f"`{doc['command']}`, run {doc['run_at']} at {doc.get('commit', '?')} on {doc.get('cores')} cores (load "
        f"average {doc.get('load_start')} at the start, {doc.get('load_end')} at the end). Car, N x N seeded random "
        "points of the region that snap to a road; every run sends the matrix to each engine in turn with the same "
        "client (one keep-alive `http.client` connection per server, timed to the last byte); p50 in ms after a "
        "warm-up round. Meridian: gunicorn (2 workers) with a Celery worker on `matrix` (1,000 x 1,000 is computed "
        "there while the request waits), key check and quota included, each call moved 1 cm so that none is "
        "answered from the cache. Targets (issue 30): 100 x 100 <= 2x OSRM CH and <= 0.5x Valhalla; "
        "1,000 x 1,000 <= 1x OSRM CH.",
        "",
    ]
    header = ["region", "N x N", *(label for _, label in MATRIX_ROWS), "/ OSRM", "/ Valhalla"]
    if before:
        header.append("Meridian HTTP before")
    rows = []
    for r in doc["results"]:
        single, timed_out = set(r.get("single_call", [])), set(r.get("timed_out", []))
        cells = [
            f"no answer in {r.get('timeout_s', 0):g} s"
            if key.split("_")[0] in timed_out
            else _ms(r.get(key)) + (" (1 call)" if key.split("_")[0] in single else "")
            for key, _ in MATRIX_ROWS
        ]
        row = [
            r["region"],
            f"{r['n']:,}",
            *cells,
            _ratio(r.get("meridian_p50_ms"), r.get("osrm_p50_ms")),
            _ratio(r.get("meridian_p50_ms"), r.get("valhalla_p50_ms")),
        ]
        if before:
            old = before.get((r["region"], r["n"]), {})
            row.append(
                f"{_ms(old.get('meridian_p50_ms'))} ({_ratio(old.get('meridian_p50_ms'), old.get('osrm_p50_ms'))} OSRM)"
                if old
                else ""
            )
        rows.append(row)
    lines += _table(header, rows)
    if before:
        b = _load("matrix-before.json") or {}
        lines += [
            f"Before: `{b.get('command')}` at {b.get('commit', '?')}, run {b.get('run_at')} (load average "
            f"{b.get('load_start')} -> {b.get('load_end')}), OSRM timed in the same run.",
            "",
        ]
    agreements = [r for r in doc["results"] if r.get("agreement_vs_osrm")]
    if agreements:
        classes = list(agreements[0]["agreement_vs_osrm"]["others"])
        lines += [
            "Agreement with OSRM (the last run's answers; target: >= 0.85 of the cells within 5 % of OSRM's "
            "distance). The other cells, each counted in the first class that explains it:",
            "",
        ]
        lines += _table(
            ["region", "N x N", "within 5 %", "within 10 %", "median distance ratio", *classes],
            [
                [
                    r["region"],
                    f"{r['n']:,}",
                    f"{a['share_within_5pct']:.1%}",
                    f"{a['share_within_10pct']:.1%}",
                    a["median_distance_ratio"],
                    *(f"{a['others'][c]:,}" for c in classes),
                ]
                for r in agreements
                for a in [r["agreement_vs_osrm"]]
            ],
        )
        lines += [
            "Within 5 % among the cells not explained by a point snapped apart: "
            + "; ".join(
                f"{r['region']} {r['n']:,} x {r['n']:,} {_same_snap_share(r['agreement_vs_osrm']):.1%}"
                for r in agreements
            )
            + ".",
            "",
        ]
    return lines


def _same_snap_share(agr: dict) -> float:
    apart = sum(v for k, v in agr["others"].items() if "snapped" in k)
    return agr["within_5pct"] / max(1, agr["cells"] - apart)


def optimization_section(doc: dict) -> list[str]:
    """bench.optimization: Meridian's ``POST /v1/optimization`` end to end next to VROOM over OSRM,
    one row per problem and their total (a file of one problem, before ``--problems``, is its seed 200)."""
    problems = doc.get("problems") or [{"seed": 200, **doc}]
    lines = [
        "## Route optimisation next to VROOM + OSRM",
        "",
        f"`{doc['command']}`, run {doc['run_at']} at {doc.get('commit', '?')} on {doc.get('cores')} cores (load "
        f"average {doc.get('load_start')} -> {doc.get('load_end')}). {doc['region'].title()} sample, {doc['jobs']} "
        f"jobs with 1-hour time windows in an 8-hour day, {doc['vehicles']} vehicles of capacity 60 from one depot "
        f"(`tests/engine/optimization_check.py` builds it; {len(problems)} such problems, seeds "
        f"{', '.join(str(p['seed']) for p in problems)}); p50 of "
        f"{doc['runs']} runs taking turns after a warm-up. Meridian: gunicorn, the `optimization` queue and its worker, "
        "every answer checked by the tests' independent checker (time windows, capacities, each job once, by "
        "Meridian's own matrix). VROOM + OSRM: `pyvroom` in the benchmark's process over OSRM CH's `/table` fetched "
        "in the same run, the same exploration level and threads, then each route's line from OSRM's `/route` "
        "(what `vroom -g` does). 'Solve alone': VROOM's solve in process over Meridian's matrix / over OSRM's: "
        "the search follows the matrix it is given. Target (issue 30): Meridian <= 10 s and no slower than "
        "VROOM + OSRM.",
        "",
    ]
    rows = []
    for p in problems:
        m, v = p["meridian"], p["vroom_osrm"]
        rows.append(
            [
                p["seed"],
                f"{m['p50_s']} ({' / '.join(map(str, m['seconds']))})",
                f"{v['p50_seconds']} ({' / '.join(map(str, v['seconds']))})",
                p["meridian_over_vroom_osrm"],
                f"{m['p50_solve_alone_s']} / {v['p50_solve_s']}",
                f"{m['served']} / {v['served']} of {doc['jobs']}",
                f"{m['cost']} / {v['cost']}",
            ]
        )
    lines += _table(
        [
            "problem (seed)",
            "Meridian end to end, p50 s (runs)",
            "VROOM + OSRM, p50 s (runs)",
            "ratio",
            "solve alone s, Meridian's / OSRM's matrix",
            "served",
            "cost s",
        ],
        rows,
    )
    timeout = doc.get("solve_timeout_s")
    bound = f" VROOM's search is bounded by {timeout:g} s in both (`SOLVE_TIMEOUT_S`)." if timeout else ""
    total = doc.get("total_p50_s")
    of_all = f"all problems {total['meridian']} s / {total['vroom_osrm']} s = " if total else ""
    return lines + [f"Meridian / VROOM + OSRM: {of_all}{doc['meridian_over_vroom_osrm']}x.{bound}", ""]


COLD_STEPS = ("lookup", "addresses", "streets")  # bench/reverse_cold.py's steps, in its order
COLD_PAIRS = ("both_in_turn", "both_beside")  # its two spatial steps together (runs after 2026-12-03)


def reverse_cold_section(doc: dict) -> list[str]:
    """bench/reverse_cold.py: one row per run, what a reverse lookup reads from a cold file."""
    lines = [
        "## Reverse geocoding from a cold page cache",
        "",
        "`python -m bench.reverse_cold --data-dir DIR --region REGION`: in process, random points of "
        "the region (several data directories: the same points, taking turns), `search.sqlite`'s pages "
        "dropped from the page cache before each call (SQLite's own "
        "cache of the connection, mostly the B-trees' interior pages, stays, as in a serving process); "
        "a read is at least 16 KB (the kernel's read-ahead). KB read and ms, p50 (p90). Each step at a "
        "point of its own; †: at the lookup's point right after it, SQLite's cache holding the interior "
        "pages that lookup read (runs before 2026-12-02 evening). The last two columns: the address step "
        "and the street step at one point, on one thread in turn, and with the street step on another "
        "thread (`engine/beside.py`), as the lookup runs them since 2026-12-03.",
        "",
    ]
    rows = []
    for run in doc["runs"]:
        steps = run["steps"]
        after_lookup = "" if run.get("steps_at_own_points") else " †"
        rows.append(
            [
                f"{run['label']} (`{run['commit']}`, {run['run_at'][:10]})",
                f"{run['search_db_mb']:,.0f}",
                run["points"],
                *(
                    f"{steps[s]['kb']['p50']:,.0f} ({steps[s]['kb']['p90']:,.0f}){after_lookup * (s != 'lookup')}"
                    for s in COLD_STEPS
                ),
                *(
                    f"{steps[s]['ms']['p50']:.2f} ({steps[s]['ms']['p90']:.2f}){after_lookup * (s != 'lookup')}"
                    for s in COLD_STEPS
                ),
                *(
                    f"{steps[s]['ms']['p50']:.2f} ({steps[s]['ms']['p90']:.2f})" if s in steps else "—"
                    for s in COLD_PAIRS
                ),
            ]
        )
    header = [
        "dataset",
        "search.sqlite MB",
        "points",
        "lookup KB",
        "address step KB",
        "street step KB",
        "lookup ms",
        "address step ms",
        "street step ms",
        "both steps in turn ms",
        "both steps, streets beside ms",
    ]
    return lines + _table(header, rows)


def _kept_sections(generated: list[str]) -> list[str]:
    """The sections of the current docs/benchmarks.md that no result file writes (measurements
    written by hand, e.g. a one-off run), kept as they are after the generated ones."""
    if not OUT.exists():
        return []
    titles = {line for line in generated if line.startswith("## ")}
    kept: list[str] = []
    keep = False
    for line in OUT.read_text().splitlines():
        if line.startswith("## "):
            keep = line not in titles
        if keep:
            kept.append(line)
    return kept


def _mb(value: float | None) -> str:
    return "" if value is None else f"{value / 1024:.1f} GB" if value >= 1024 else f"{value:.0f} MB"


def _stage_peak(stage: dict) -> str:
    """A stage's peak resident set, with the anonymous part of it where measured (the rest is
    pages of mapped files)."""
    anon = stage.get("peak_anon_mb")
    return _mb(stage.get("peak_rss_mb")) + (f" (anon {_mb(anon)})" if anon is not None else "")


def _stages_peak(stages: dict) -> str:
    return ", ".join(f"{name} {_stage_peak(s)} / {s['seconds']:.0f} s" for name, s in stages.items())


def _paging(serve: dict) -> str:
    """What the passes routed and the pages read back from disk while they ran, where counted."""
    passes = [p for p in (serve, serve.get("second_pass", {})) if "paging" in p]
    if not passes:
        return ""
    routed = ",".join(serve.get("route_profiles") or [])
    faults = " then ".join(
        f"{sum(p['paging']['web_major_faults']):,} ({p['paging']['machine_major_faults']:,} machine-wide)"
        for p in passes
    )
    return f"; routed {routed}; pages read back from disk by the web workers, first then second pass: {faults}{_page_cache(serve)}"


def _page_cache(serve: dict) -> str:
    """How the serve met the page cache and left it, where recorded."""
    if "dataset_cached_mb" not in serve:
        return ""
    start = "an empty page cache" if serve.get("cold_cache") else "the page cache as the run before left it"
    note = f" ({serve['dataset_cached_mb_note']})" if "dataset_cached_mb_note" in serve else ""
    return f"; served from {start}, {_mb(serve['dataset_cached_mb'])} of the dataset cached after the passes{note}"


def _osrm(entry: dict) -> str:
    osrm = entry.get("osrm_mld")
    if not osrm:
        return "not run"
    if not osrm.get("fits"):
        return f"did not fit ({osrm.get('note', 'failed')}, {osrm['wall_s']:.0f} s)"
    peak = max((s["peak_rss_mb"] for s in osrm["steps"].values()), default=None)
    return f"{osrm['wall_s']:.0f} s, peak {_mb(peak)}, {_mb(osrm['data_mb'])} on disk"


def _country_ms(ms: dict) -> str:
    return "; ".join(_p(ms.get(k)) for k in ("route", "isochrone", "geocode", "suggest", "reverse"))


def _other_profiles_ms(serve: dict) -> str:
    """The walker's and the cyclist's routes with steps, both passes; runs before they were
    measured (or of the car alone) have none."""
    passes = [serve["ms"], serve.get("second_pass", {}).get("ms", {})]
    kinds = [k for k in ("route_foot", "route_bicycle") if k in passes[0]]
    if not kinds:
        return "not measured"
    return "; ".join(f"{k[len('route_') :]} {' then '.join(_p(ms.get(k)) for ms in passes)}" for k in kinds)


# the client of bench.country's runs before it used bench/http_client.py
REQUESTS_CLIENT = "`requests` (about 0.65 ms more a call than bench/http_client.py's)"


def _replicate(times: dict | None) -> str:
    if times is None:
        return "not measured"
    return f"{times['publish_s']:.0f} / {times['pull_s']:.0f} s"


def country_section(doc: dict) -> list[str]:
    lines = [
        "## A country on one machine (synthetic, bench/country.py)",
        "",
        f"`{COUNTRY_CMD}`",
        "",
        "The synthetic city of `bench/synthetic.py` at country size (2.5 addresses and POIs per "
        "road node: 10M nodes, 25M addresses), imported by `meridian import` under "
        "`/usr/bin/time -v`, served by the Procfile's processes (gunicorn as config/gunicorn.py "
        "starts it, the Celery workers), asked over HTTP one request at a time (the client of each run is "
        "named under the table); private memory is "
        "each process's USS after the queries (it counts the dataset's mapped pages that no other "
        "process touched), own memory the pages the process wrote and alone maps (bench/memory.py). 'start' is from the processes' start: ready, first "
        "route, first isochrone. The latencies are measured twice, on other points each time: first on the node just started, then on the node that has served the first pass. OSRM: the peers kit's MLD build (extract, partition, customize) "
        "of the same PBF.",
        "",
    ]
    rows = []
    for e in doc["sizes"]:
        imp, serve = e["import"], e["serve"]
        ms, mem, start = serve["ms"], serve["memory"], serve["start"]
        rows.append(
            [
                f"{e['nodes']:,} / {e['addresses']:,}",
                ",".join(imp.get("profiles") or []),
                f"{imp['wall_s'] / 60:.1f} min",
                _mb(imp["peak_rss_mb"]),
                _stages_peak(imp["stages"]),
                _mb(imp["dataset_mb"]),
                f"{start['ready_s']:.0f} / {start['first_route_s']:.0f} / {start['first_isochrone_s']:.0f} s",
                _country_ms(ms),
                _country_ms(serve["second_pass"]["ms"]) if "second_pass" in serve else "not measured",
                _other_profiles_ms(serve),
                _mb(max(mem["web_private_mb"])),
                _mb(max(mem["web_own_mb"])) if "web_own_mb" in mem else "not measured",
                _mb(mem["worker_private_total_mb"]),
                _replicate(e.get("replicate")),
                _osrm(e),
            ]
        )
    header = [
        "nodes / addresses",
        "profiles",
        "import",
        "import peak",
        "per stage: peak / time",
        "dataset",
        "start: ready / route / iso",
        "ms, p50 / p95: route with steps; isochrone; geocode; suggest; reverse",
        "the same, second pass on other points",
        "route with steps on foot, by bicycle, p50 / p95 ms: first then second pass",
        "web worker private (USS)",
        "web worker own (private dirty)",
        "all workers private",
        "publish / pull",
        "OSRM MLD",
    ]
    notes = [
        f"- {e['nodes']:,} nodes, {size_key(e)[1]}: load average {e.get('load_average_during_run', e.get('load_average_at_start'))}; "
        f"HTTP client {e['serve'].get('client', REQUESTS_CLIENT)}{_paging(e['serve'])}"
        for e in doc["sizes"]
    ]
    return (
        lines
        + _table(header, rows)
        + ["The machine's load during each run (times stretch with it):", *notes, ""]
        + _roads_stage_rows(doc)
    )


def _roads_stage_rows(doc: dict) -> list[str]:
    """The profiles beyond the car, their roads stage alone (bench/roads_stage.py)."""
    rows = []
    for e in doc["sizes"]:
        for profiles, r in e.get("roads_stage", {}).items():
            for name, p in r["profiles"].items():
                routes = r["routes"][name]
                rows.append(
                    [
                        f"{e['nodes']:,}",
                        profiles,
                        f"{r['wall_s'] / 60:.1f} min, peak {_mb(r['peak_rss_mb'])}",
                        name,
                        f"{p['seconds']['turns']:.0f} / {p['seconds']['ch']:.0f} s",
                        f"{p['counts']['edges']:,} / {p['counts']['ch_core']:,}",
                        "; ".join(
                            f"{routes[k]['p50_ms']:.1f} / {routes[k]['p95_ms']:.1f} ({routes[k]['median_km']} km)"
                            for k in ("any", "within_5_km", "within_20_km")
                        ),
                    ]
                )
    if not rows:
        return []
    header = [
        "nodes",
        "profiles",
        "roads stage",
        "profile",
        "turn table / contraction",
        "edges / CH core nodes",
        "route ms p50 / p95 (median length), in process: any two points; within 5 km; within 20 km",
    ]
    notes = [
        f"- {e['nodes']:,}, {profiles} (code {r.get('code', '?')}, {r.get('started', '?')}): {r['note']}"
        for e in doc["sizes"]
        for profiles, r in e.get("roads_stage", {}).items()
        if r.get("note")
    ]
    return [
        "The roads stage alone for the profiles beyond the car (`python -m bench.roads_stage --nodes N "
        "--profiles foot,bicycle`: one reading pass, each profile's graph, contraction and derived arrays, "
        "under `/usr/bin/time -v`); the import of all profiles adds this to the car's import above.",
        "",
        *_table(header, rows),
        *notes,
        "",
    ]


def main() -> None:
    lines = [
        "# Benchmarks",
        "",
        "Written by `python -m bench.report` from `bench/results/*.json`; "
        "the peers (OSRM, Valhalla) run from `../shared/peers/` on the same machine in the same "
        "run. Compare ratios: the machines are shared and absolute times move by 30-50 % "
        "between runs.",
        "",
    ]
    for name, section in (
        ("routing.json", routing_section),
        ("routing-pairs.json", routing_pairs_section),
        ("heavy.json", heavy_section),
        ("latency-wrk.json", throughput_section),
        ("throughput.json", throughput_section),
        ("throughput-mix.json", mix_section),
        ("matching.json", matching_section),
        ("scaling.json", scaling_section),
        ("load.json", load_section),
        ("scaling-search.json", search_scaling_section),
        ("travel-profiles.json", travel_profiles_section),
        ("profiles-agreement.json", profiles_agreement_section),
        ("matrix.json", matrix_section),
        ("optimization.json", optimization_section),
        ("country.json", country_section),
        ("reverse_cold.json", reverse_cold_section),
    ):
        doc = _load(name)
        if doc:
            lines += section(doc)
    lines += _kept_sections(lines)
    OUT.write_text("\n".join(lines))
    print(f"written {OUT}")


if __name__ == "__main__":
    main()
