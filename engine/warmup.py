"""Warming a process up: every numba kernel compiled (or loaded from numba's cache) and every
dataset opened before the process says it is ready, so that no request waits on either.

- :class:`WarmState`: what a process is doing to get warm, for ``/v1/health/ready`` (the web,
  ``app/health.py``) and the logs; counts the compilations it saw (numba's ``numba:compile``
  event, sent only when a kernel is compiled, not when it is loaded from the cache).
- :func:`warm_dataset`: opens every component of one dataset and runs each engine service once
  on it (a route with alternatives and an avoided class, an isochrone, a map match, a static map,
  the searches), so every kernel a request runs is compiled for the types a request passes.
- :func:`warm_registry`: the same for every dataset of a registry (a process's start).
- :func:`build_cache`: the image's build step (``meridian warmup``): imports a tiny synthetic
  town (every import kernel) and warms it (every request kernel), writing ``NUMBA_CACHE_DIR``.

numba keys its cache by the source file, the types and the CPU (name and features): a process
on another CPU than the one that filled the cache compiles again (while not ready), unless both
set ``NUMBA_CPU_NAME=generic`` (docs/deployment.md, "Cold start").
"""

from __future__ import annotations

import fcntl
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numba.core import event

from engine.dataset import COMPONENTS, PROFILE_COMPONENTS, Dataset, DatasetRegistry
from engine.geofence.index import warm_up as geofence_warm_up
from engine.render.overlays import Marker
from engine.render.overlays import Path as OverlayPath
from engine.routing.ch import reserve_workspace
from engine.services import (
    geocoding,
    isochrone,
    poi,
    proximity,
    reverse_geocoding,
    routing,
    snaptoroad,
    staticmap,
    suggest,
)

log = logging.getLogger("meridian.warmup")


class _CompileCounter(event.Listener):
    """Counts numba compilations in this process and names the kernels being compiled."""

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0
        self.current: dict[int, str] = {}  # thread id -> kernel being compiled
        self._started: dict[int, float] = {}
        self._lock = threading.Lock()

    def on_start(self, ev: event.Event) -> None:
        func = ev.data["dispatcher"].py_func
        with self._lock:
            self.current[threading.get_ident()] = f"{func.__module__}.{func.__qualname__}"
            self._started[threading.get_ident()] = time.perf_counter()

    def on_end(self, ev: event.Event) -> None:
        with self._lock:
            tid = threading.get_ident()
            self.current.pop(tid, None)
            self.count += 1
            self.seconds += time.perf_counter() - self._started.pop(tid, time.perf_counter())


_counter: _CompileCounter | None = None
_counter_lock = threading.Lock()


def compile_counter() -> _CompileCounter:
    """The process's compilation counter, registered with numba on first use."""
    global _counter
    with _counter_lock:
        if _counter is None:
            _counter = _CompileCounter()
            event.register("numba:compile", _counter)
        return _counter


class PeerWarmth:
    """Warm markers of the processes of one server (gunicorn's web workers, which share a listening
    socket: a request may reach any of them), so that each says ready only once all are warm.
    A marker is a file named by the process id in a directory of the server's own; markers of
    processes that have exited do not count (a restarted worker warms again)."""

    def __init__(self, directory: Path, expected: int) -> None:
        self.directory = directory
        self.expected = expected

    def mark(self, pid: int) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / str(pid)).touch()

    def warm(self) -> int:
        alive = 0
        for entry in self.directory.glob("*") if self.directory.is_dir() else ():
            try:
                os.kill(int(entry.name), 0)
            except (ValueError, ProcessLookupError):
                continue
            except PermissionError:
                pass  # exists, owned by someone else
            alive += 1
        return alive


class WarmState:
    """A process's way to warm: ``lazy`` (no warm-up asked: kernels compile on first use, as in
    a test or `flask run`; counts as ready), ``warming`` (a step under way), ``warm``, or
    ``failed`` (a dataset that would not open: the process stays unready, visibly)."""

    def __init__(self) -> None:
        self.phase = "lazy"
        self.step = ""
        self.error = ""
        self.seconds = 0.0
        self._t0 = 0.0
        self._compiled_before = 0
        self.counter = compile_counter()
        self.peers: PeerWarmth | None = None  # the other processes of this server, if any

    def start(self) -> None:
        self.phase, self._t0, self._compiled_before = "warming", time.perf_counter(), self.counter.count

    def at(self, step: str) -> None:
        self.step = step

    def finish(self, error: str = "") -> None:
        self.seconds = round(time.perf_counter() - self._t0, 2)
        self.phase, self.error, self.step = ("failed" if error else "warm"), error, ""

    @property
    def compiled(self) -> int:
        """Kernels compiled during the warm-up (0 when all came from numba's cache)."""
        return self.counter.count - self._compiled_before

    def check(self) -> dict[str, Any]:
        """The readiness check ``warm``: ok once warm; ``compiled_total`` counts every compilation
        of the process (a request that compiled would move it)."""
        out: dict[str, Any] = {
            "ok": self.phase in ("warm", "lazy"),
            "phase": self.phase,
            "compiled": self.compiled,
            "compiled_total": self.counter.count,
        }
        if self.phase == "warm":
            out["seconds"] = self.seconds
            if self.peers is not None:
                warm = self.peers.warm()
                out["processes_warm"] = f"{warm}/{self.peers.expected}"
                if warm < self.peers.expected:
                    out["ok"] = False
                    out["detail"] = f"{warm} of {self.peers.expected} web worker processes warm"
        elif self.phase == "warming":
            compiling = sorted(set(self.counter.current.values()))
            out["detail"] = self.step + (f"; compiling {', '.join(compiling)}" if compiling else "")
        elif self.phase == "failed":
            out["detail"] = f"warm-up failed: {self.error}"
        return out


@contextmanager
def _one_compiler_at_a_time() -> Iterator[None]:
    """On an empty numba cache, processes of one machine warm one after another (a lock file in
    the cache directory): the first compiles and writes the cache, the others then load from it
    instead of compiling the same kernels side by side on the same cores. With a filled cache
    (the image's) they load in parallel: waiting for each other cost 5 s on the samples."""
    root = os.environ.get("NUMBA_CACHE_DIR")
    if not root or any(Path(root).rglob("*.nbi")):
        yield
        return
    path = Path(root) / ".meridian-warmup.lock"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "a+b")  # noqa: SIM115 - held for the block
    except OSError:
        yield  # no writable place for the lock: warm without it
        return
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# What a process can be warmed for: each group's services, and the dataset components they read.
# A web process serves every function and warms every group; a Celery worker only the groups of
# the queues it consumes (tasks/warmup.py), so a map worker opens no routing graph.
WARM_GROUPS: dict[str, tuple[str, ...]] = {
    "routing": ("router",),
    "isochrone": ("router", "roadnet"),
    "snaptoroad": ("router", "roadnet"),
    "staticmap": ("layers",),
    "search": ("search", "admin"),
}
EVERY_GROUP = frozenset(WARM_GROUPS)


def components_for(groups: frozenset[str]) -> list[str]:
    """The components the ``groups`` read, in :data:`COMPONENTS`' order."""
    wanted = {name for group in groups for name in WARM_GROUPS[group]}
    return [name for name in COMPONENTS if name in wanted]


def _routes(groups: frozenset[str]) -> bool:
    """Whether the ``groups`` read a routing graph (and want the CH query workspace sized)."""
    return "router" in components_for(groups)


def _quietly(what: str, call: Callable[[], object]) -> None:
    """Run one warming call; a failure (a sample without a road here, ...) is logged, not raised:
    the kernels it reached are compiled either way."""
    try:
        call()
    except Exception as exc:
        log.debug("warm-up call %s: %s: %s", what, type(exc).__name__, exc)


@dataclass(frozen=True)
class _Probe:
    """Two points on the largest connected part of a dataset's road network, a short walk apart."""

    a: tuple[float, float]
    b: tuple[float, float]
    c: tuple[float, float]


def _box_probe(ds: Dataset) -> _Probe:
    """Three points inside the dataset's box (a process that draws maps opens no routing graph)."""
    box = ds.bbox

    def at(f: float) -> tuple[float, float]:
        return (box.min_lat + f * (box.max_lat - box.min_lat), box.min_lng + f * (box.max_lng - box.min_lng))

    return _Probe(at(0.45), at(0.5), at(0.55))


def _probe(ds: Dataset) -> _Probe | None:
    router = ds.router
    g = router.g
    if int(g.edge_tail.shape[0]) == 0:
        return None
    size = np.asarray(g.edge_component_size)
    e = int(np.argmax(size))
    comp = np.asarray(g.edge_component)
    same = np.flatnonzero(comp == comp[e])
    picks = [int(same[0]), int(same[len(same) // 2]), int(same[-1])]

    def mid(edge: int) -> tuple[float, float]:
        tail, head = int(g.edge_tail[edge]), int(router.edge_head[edge])
        return (
            float((router.node_lat[tail] + router.node_lat[head]) / 2),
            float((router.node_lng[tail] + router.node_lng[head]) / 2),
        )

    return _Probe(mid(picks[0]), mid(picks[1]), mid(picks[2]))


def _run_services(ds: Dataset, p: _Probe, groups: frozenset[str]) -> None:
    """Each engine service of ``groups`` once on ``ds`` alone, the way a request calls it."""

    only = DatasetRegistry.holding([ds])
    calls: list[tuple[str, str, Callable[[], object]]] = [
        ("routing", "route", lambda: routing.run(only, routing.RoutingParams(p.a, p.c, waypoints=(p.b,)))),
        (
            "routing",
            "route alternatives",
            lambda: routing.run(
                only,
                routing.RoutingParams(p.a, p.c, alternatives=1, avoid=frozenset({"tolls"}), geometry="geojson"),
            ),
        ),
        (
            "routing",
            "route polyline6",
            lambda: routing.run(only, routing.RoutingParams(p.c, p.a, steps=False, geometry="polyline6")),
        ),
        ("isochrone", "isochrone time", lambda: isochrone.run(only, isochrone.IsochroneParams(*p.b, times=(2.0, 4.0)))),
        (
            "isochrone",
            "isochrone distance",
            lambda: isochrone.run(only, isochrone.IsochroneParams(*p.b, distances=(500.0,))),
        ),
        (
            "snaptoroad",
            "snap to road",
            lambda: snaptoroad.run(
                only, snaptoroad.SnapParams((p.a, p.b, p.c), timestamps=(0.0, 60.0, 120.0), interpolate=True)
            ),
        ),
        ("snaptoroad", "snap to road untimed", lambda: snaptoroad.run(only, snaptoroad.SnapParams((p.a, p.b)))),
        (
            "staticmap",
            "static map",
            lambda: staticmap.run(
                only,
                staticmap.StaticMapParams(
                    center=p.b,
                    zoom=15,
                    width=64,
                    height=64,
                    markers=(Marker(*p.a),),
                    paths=(OverlayPath(points=(p.a, p.b, p.c)),),
                ),
            ),
        ),
        ("search", "reverse", lambda: reverse_geocoding.run(only, reverse_geocoding.ReverseParams(*p.b))),
        ("search", "geocode", lambda: geocoding.run(only, geocoding.GeocodeParams(query="main street 1", near=p.b))),
        ("search", "suggest", lambda: suggest.run(only, suggest.SuggestParams(q="mai", near=p.b))),
        ("search", "poi", lambda: poi.run(only, poi.PoiParams(q="cafe", near=p.b, radius=2000.0))),
        ("search", "nearest", lambda: proximity.run(only, proximity.NearestParams(*p.b, categories=("cafe",)))),
    ]
    for group, what, call in calls:
        if group in groups:
            _quietly(what, call)


def warm_dataset(ds: Dataset, state: WarmState | None = None, groups: frozenset[str] = EVERY_GROUP) -> None:
    """Open every component of ``ds`` the ``groups`` read and run each of their services once on
    it. Raises the error of a component that does not open (the dataset is then not fit to serve)."""
    names = components_for(groups)
    opened = [(name, "car") for name in names]
    opened += [(name, p) for name in sorted(PROFILE_COMPONENTS & set(names)) for p in ds.profiles if p != "car"]
    for name, profile in opened:
        if state is not None:
            state.at(f"opening {ds.region} {ds.version} {name} ({profile})")
        ds.component(name, profile)
    routes = _routes(groups)
    if routes:
        reserve_query_workspace([ds])
    probe = _probe(ds) if routes else _box_probe(ds)
    if probe is None:
        return
    if state is not None:
        state.at(f"running each service once on {ds.region} {ds.version}")
    _run_services(ds, probe, groups)


def reserve_query_workspace(datasets: list[Dataset]) -> None:
    """The process's CH workspace sized at once for the largest routing graph of ``datasets``
    (every profile of every region), before a query grows it graph by graph."""
    reserve_workspace(ds.component("router", profile).g for ds in datasets for profile in ds.profiles)


def warm_in_background(
    registry: DatasetRegistry,
    state: WarmState,
    then: Callable[[], None] | None = None,
    groups: frozenset[str] = EVERY_GROUP,
) -> None:
    """Mark ``state`` warming now, then warm ``registry`` for ``groups`` in a thread (and call ``then``)."""
    state.start()

    def run() -> None:
        warm_registry(registry, state, groups=groups)
        if then is not None:
            then()

    threading.Thread(target=run, name="meridian-warmup", daemon=True).start()


def warm_registry(
    registry: DatasetRegistry, state: WarmState, attempts: int = 3, groups: frozenset[str] = EVERY_GROUP
) -> None:
    """Warm every dataset of ``registry`` for ``groups`` (a process's start), recording progress
    in ``state``; never raises: a failure leaves ``state`` failed, and the process unready. A dataset replaced
    while it warmed (a newer version pulled, the old one removed) is no failure: the datasets
    served then are warmed again (the new ones were warmed before they replaced the old)."""
    if state.phase != "warming":
        state.start()
    error = ""
    for _ in range(attempts):
        served = registry.all()
        try:
            with _one_compiler_at_a_time():
                if _routes(groups):
                    reserve_query_workspace(served)
                for ds in served:
                    warm_dataset(ds, state, groups)
                state.step = "geofence distance kernel"
                geofence_warm_up()
        except Exception as exc:
            log.warning("warm-up: %s: %s", type(exc).__name__, exc)
            error = f"{type(exc).__name__}: {exc}"
            if registry.all() != served:
                continue
            break
        state.finish()
        log.info(
            "warm: %d dataset(s) opened, %d kernel(s) compiled (%.1f s compiling), in %.1f s",
            len(served),
            state.compiled,
            compile_counter().seconds,
            state.seconds,
        )
        return
    state.finish(error)


# -- the image's build step -------------------------------------------------------------------

TOWN_BLOCKS = 8  # an 8 x 8 grid of 150 m blocks: every code path of the import, in seconds


def write_town(path: Path, blocks: int = TOWN_BLOCKS) -> Path:
    """A small synthetic town as an OSM PBF: named streets (a toll primary, a one-way, a
    motorway link), traffic signals, a turn restriction, house numbers, POIs and a place."""
    import osmium
    from osmium.osm import mutable

    lat0, lng0, step = 10.0, -30.0, 150.0 / 111_320.0  # somewhere in the Atlantic
    n = blocks + 1

    def nid(i: int, j: int) -> int:
        return 1 + i * n + j

    writer = osmium.SimpleWriter(str(path))
    try:
        for i in range(n):
            for j in range(n):
                tags = {"highway": "traffic_signals"} if (i, j) == (n // 2, n // 2) else {}
                writer.add_node(mutable.Node(id=nid(i, j), location=(lng0 + j * step, lat0 + i * step), tags=tags))
        extra = 10_000
        for i in range(n - 1):
            for j in range(n - 1):  # an address and, now and then, a cafe in every block
                lat, lng = lat0 + (i + 0.3) * step, lng0 + (j + 0.5) * step
                tags = {"addr:housenumber": str(2 * j + 1), "addr:street": f"Main Street {i}", "addr:postcode": "00100"}
                writer.add_node(mutable.Node(id=extra, location=(lng, lat), tags=tags))
                extra += 1
                if (i + j) % 5 == 0:
                    cafe = {"amenity": "cafe", "name": f"Cafe {i}-{j}"}
                    writer.add_node(mutable.Node(id=extra, location=(lng + step / 4, lat), tags=cafe))
                    extra += 1
        writer.add_node(
            mutable.Node(
                id=extra, location=(lng0 + 4 * step, lat0 + 4 * step), tags={"place": "town", "name": "Warmup"}
            )
        )
        way = 1
        for i in range(n):  # rows: east-west streets
            tags = {"highway": "primary" if i == n // 2 else "residential", "name": f"Main Street {i}"}
            if i == n // 2:
                tags["toll"] = "yes"
            if i == 1:
                tags["oneway"] = "yes"
            writer.add_way(mutable.Way(id=way, nodes=[nid(i, j) for j in range(n)], tags=tags))
            way += 1
        for j in range(n):  # columns: north-south avenues
            tags = {"highway": "secondary" if j == n // 2 else "residential", "name": f"Avenue {j}"}
            writer.add_way(mutable.Way(id=way, nodes=[nid(i, j) for i in range(n)], tags=tags))
            way += 1
        c = n // 2
        members = [("w", c + 1, "from"), ("n", nid(c, c), "via"), ("w", n + c + 1, "to")]
        writer.add_relation(
            mutable.Relation(id=1, members=members, tags={"type": "restriction", "restriction": "no_left_turn"})
        )
    finally:
        writer.close()
    return path


@dataclass(frozen=True)
class CacheBuild:
    compiled: int
    seconds: float
    cache_dir: str


def build_cache(workdir: Path | None = None) -> CacheBuild:
    """Compile every kernel into ``NUMBA_CACHE_DIR``: import the synthetic town, then warm it."""
    from engine.ingest.pipeline import import_pbf  # the import side (osmium) only for this build step

    counter = compile_counter()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        root = Path(tmp)
        import_pbf(write_town(root / "warmup.osm.pbf"), root / "data", "warmup")
        registry = DatasetRegistry(root / "data")
        state = WarmState()
        warm_registry(registry, state)
        for ds in registry.all():
            ds.close()
        if state.phase != "warm":
            raise RuntimeError(f"warm-up of the synthetic town failed: {state.error}")
    return CacheBuild(counter.count, round(time.perf_counter() - t0, 1), os.environ.get("NUMBA_CACHE_DIR", ""))
