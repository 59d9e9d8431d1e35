"""engine/warmup.py: warming runs every kernel a request runs; a new version is opened and warm
before it replaces the one served (DatasetRegistry ``prepare``)."""

from __future__ import annotations

import threading
from pathlib import Path

from engine.dataset import COMPONENTS, Dataset, DatasetRegistry
from engine.routing import ch
from engine.services import routing, snaptoroad
from engine.warmup import EVERY_GROUP, WarmState, compile_counter, warm_dataset, warm_registry

MONACO = ((43.7312, 7.4197), (43.7406, 7.4270))


def test_after_warm_requests_compile_nothing(data_dir: Path) -> None:
    registry = DatasetRegistry(data_dir)
    state = WarmState()
    assert state.check()["ok"] and state.check()["phase"] == "lazy"
    warm_registry(registry, state)
    assert state.check()["ok"] and state.phase == "warm", state.check()
    before = compile_counter().count
    routing.run(registry, routing.RoutingParams(*MONACO, alternatives=2, avoid=frozenset({"tolls"})))
    snaptoroad.run(registry, snaptoroad.SnapParams(MONACO, timestamps=(0.0, 90.0)))
    assert compile_counter().count == before  # numba's compile event: nothing compiled in a request


def _two_versions(data_dir: Path, root: Path) -> tuple[Path, list[str]]:
    """A DATA_DIR of our own whose helsinki region has two versions, ``a`` and ``b``: directories
    of links to the files of the samples' current version (nothing of ``data_dir`` is changed)."""
    source = (data_dir / "regions" / "helsinki" / "current").resolve()
    region = root / "regions" / "helsinki"
    for version in ("a", "b"):
        target = region / "versions" / version
        target.mkdir(parents=True)
        for item in source.iterdir():
            (target / item.name).symlink_to(item)
    (region / "current").symlink_to(Path("versions") / "a")
    return region, ["a", "b"]


def _move_current(region: Path, version: str) -> None:
    tmp = region / "current.new"
    tmp.symlink_to(Path("versions") / version)
    tmp.replace(region / "current")


def test_new_version_served_only_once_warm(data_dir: Path, tmp_path: Path) -> None:
    region, (old, new) = _two_versions(data_dir, tmp_path)
    release = threading.Event()
    warming = threading.Event()
    served_while_warming: list[str] = []

    def prepare(ds) -> None:
        served = registry.get("helsinki")
        served_while_warming.append(served.path.name if served else "")
        warming.set()
        assert release.wait(30)
        warm_dataset(ds)

    registry = DatasetRegistry(tmp_path, prepare=prepare)
    assert registry.require("helsinki").path.name == old
    _move_current(region, new)
    reload = threading.Thread(target=registry.reload)
    reload.start()
    assert warming.wait(30)
    assert registry.require("helsinki").path.name == old  # still the old one while the new warms
    release.set()
    reload.join(60)
    assert served_while_warming == [old]
    assert registry.require("helsinki").path.name == new


def test_new_version_that_fails_to_open_is_not_served(data_dir: Path, tmp_path: Path) -> None:
    region, (old, new) = _two_versions(data_dir, tmp_path)

    def prepare(ds) -> None:
        raise OSError("disk gone")

    registry = DatasetRegistry(tmp_path, prepare=prepare)
    _move_current(region, new)
    registry.reload()
    assert registry.require("helsinki").path.name == old


def test_ready_only_once_every_process_of_the_server_is_warm(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from engine.warmup import PeerWarmth

    state = WarmState()
    state.peers = PeerWarmth(tmp_path / "server", expected=2)
    state.start()
    state.finish()
    state.peers.mark(os.getpid())
    check = state.check()
    assert not check["ok"] and check["detail"] == "1 of 2 web worker processes warm"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    state.peers.mark(int(gone.stdout))  # a process that has exited does not count
    assert not state.check()["ok"]
    sibling = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        state.peers.mark(sibling.pid)
        assert state.check()["ok"] and state.check()["processes_warm"] == "2/2"
    finally:
        sibling.kill()
        sibling.wait()


def test_warming_sizes_the_query_workspace_for_the_largest_profile_before_any_query(
    data_dir: Path, monkeypatch
) -> None:
    """A process serving several profiles borrows one CH workspace; warming sizes it for the
    largest graph at once, so that routing each profile afterwards never replaces it (a replaced
    workspace's memory stays with the allocator)."""
    monkeypatch.setattr(ch, "WORKSPACE", ch.SharedWorkspace())
    ds = DatasetRegistry(data_dir).require("monaco")
    sizes = {p: ch.node_count(ds.component("router", p).g) for p in ds.profiles}
    assert max(sizes.values()) > sizes["car"]  # a walker's graph is the larger one
    warm_dataset(ds)
    assert ch.WORKSPACE.size == max(sizes.values())
    workspace = ch.WORKSPACE.at_least(1)
    for profile in ds.profiles:
        router = ds.component("router", profile)
        assert router.leg(router.snap(*MONACO[0]), router.snap(*MONACO[1])) is not None
    assert ch.WORKSPACE.at_least(1) is workspace


def _opened_by_warming(data_dir: Path, monkeypatch, groups: frozenset[str]) -> set[tuple[str, str]]:
    opened: set[tuple[str, str]] = set()
    real = Dataset.component

    def recording(self: Dataset, name: str, profile: str = "car") -> object:
        opened.add((name, profile))
        return real(self, name, profile)

    monkeypatch.setattr(Dataset, "component", recording)
    warm_dataset(DatasetRegistry(data_dir).require("monaco"), groups=groups)
    return opened


def test_a_process_warmed_for_maps_or_searches_opens_no_routing_graph(data_dir: Path, monkeypatch) -> None:
    """A Celery worker warms what its queues run: a map worker reads the map layers only, a
    geocoding worker the search and admin indexes (each routing graph is hundreds of MB a process
    at country size)."""
    assert _opened_by_warming(data_dir, monkeypatch, frozenset({"staticmap"})) == {("layers", "car")}
    assert _opened_by_warming(data_dir, monkeypatch, frozenset({"search"})) == {("search", "car"), ("admin", "car")}


def test_warming_isochrones_opens_the_road_network_of_every_profile(data_dir: Path, monkeypatch) -> None:
    opened = _opened_by_warming(data_dir, monkeypatch, frozenset({"isochrone"}))
    profiles = DatasetRegistry(data_dir).require("monaco").profiles
    assert opened == {(name, p) for name in ("router", "roadnet") for p in profiles}
    assert {name for name, _p in _opened_by_warming(data_dir, monkeypatch, EVERY_GROUP)} == set(COMPONENTS)
