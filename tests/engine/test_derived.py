"""Arrays derived from the road graph (engine/routing/derived.py): the import writes them, the
components map them instead of building them, a dataset without them (an earlier release's)
gives the same answers, and the one CH query of a process serves concurrent threads."""

from __future__ import annotations

import shutil
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from engine import layout
from engine.dataset import DatasetRegistry
from engine.ingest.roads import CH_DERIVED, DERIVED
from engine.routing.derived import DERIVED_DIR, DerivedArrays
from engine.routing.graph import RoadGraph
from engine.services.isochrone import IsochroneParams
from engine.services.isochrone import run as isochrone
from engine.services.routing import RoutingParams
from engine.services.routing import run as route


def _mapped(array: np.ndarray) -> bool:
    """The array is a view of a file's pages, not memory of the process."""
    base = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return not isinstance(base, np.ndarray)


@pytest.fixture(scope="module")
def monaco_graph_dir(data_dir: Path) -> Path:
    return (layout.current_link(data_dir, "monaco") / layout.GRAPH_DIR).resolve()


@pytest.fixture(scope="module")
def without_derived(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> DatasetRegistry:
    """Monaco as an earlier release imported it: the graph without ``derived/``."""
    root = tmp_path_factory.mktemp("old-release")
    version = layout.current_link(data_dir, "monaco").resolve()
    copy = layout.versions_dir(root, "monaco") / version.name
    shutil.copytree(version, copy, ignore=shutil.ignore_patterns(DERIVED_DIR))
    layout.current_link(root, "monaco").symlink_to(copy)
    return DatasetRegistry(root)


def test_the_import_writes_every_group(monaco_graph_dir: Path) -> None:
    graph = RoadGraph.open(monaco_graph_dir)
    for group in DERIVED + CH_DERIVED:
        loaded = group.load(graph)
        assert set(loaded) == set(group.arrays)
        assert all(_mapped(a) for a in loaded.values()), group.name


def test_mapped_arrays_equal_computed_ones(monaco_graph_dir: Path) -> None:
    graph = RoadGraph.open(monaco_graph_dir)
    for group in DERIVED + CH_DERIVED:
        mapped, computed = group.load(graph), group.computed(graph)
        for name in group.arrays:
            assert mapped[name].dtype == np.asarray(computed[name]).dtype, (group.name, name)
            assert np.array_equal(mapped[name], computed[name]), (group.name, name)


def test_components_build_no_graph_sized_array(datasets: DatasetRegistry) -> None:
    dataset = datasets.require("monaco")
    router, network = dataset.router, dataset.component("roadnet").network
    n_edges = router.g.n_edges
    for owner in (router, router.snapper, network, network.grid):
        for name, value in vars(owner).items():
            if isinstance(value, np.ndarray) and value.size >= n_edges:
                assert _mapped(value), f"{type(owner).__name__}.{name} is built in the process"


def test_a_dataset_without_derived_arrays_answers_the_same(
    datasets: DatasetRegistry, without_derived: DatasetRegistry
) -> None:
    bbox = datasets.require("monaco").bbox
    rng = np.random.default_rng(5)
    for _ in range(30):
        a = (rng.uniform(bbox.min_lat, bbox.max_lat), rng.uniform(bbox.min_lng, bbox.max_lng))
        b = (rng.uniform(bbox.min_lat, bbox.max_lat), rng.uniform(bbox.min_lng, bbox.max_lng))
        try:
            expected = route(datasets, RoutingParams(origin=a, destination=b, alternatives=1))
        except Exception as exc:  # the same error either way
            with pytest.raises(type(exc)):
                route(without_derived, RoutingParams(origin=a, destination=b, alternatives=1))
            continue
        assert route(without_derived, RoutingParams(origin=a, destination=b, alternatives=1)) == expected
    origin = IsochroneParams(43.7384, 7.4246, times=(3.0,))
    assert isochrone(without_derived, origin) == isochrone(datasets, origin)


def test_threads_share_the_ch_query(datasets: DatasetRegistry) -> None:
    bbox = datasets.require("monaco").bbox
    rng = np.random.default_rng(9)
    pairs = [
        (
            (rng.uniform(bbox.min_lat, bbox.max_lat), rng.uniform(bbox.min_lng, bbox.max_lng)),
            (rng.uniform(bbox.min_lat, bbox.max_lat), rng.uniform(bbox.min_lng, bbox.max_lng)),
        )
        for _ in range(40)
    ]

    def distances(pair: tuple[tuple[float, float], tuple[float, float]]) -> float | None:
        try:
            found = route(datasets, RoutingParams(origin=pair[0], destination=pair[1], steps=False))
        except Exception:
            return None
        return float(found["routes"][0]["distance"])

    alone = [distances(p) for p in pairs]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(distances, pairs * 5))
    assert together == alone * 5


def test_a_group_computed_one_array_at_a_time_is_written_one_at_a_time(tmp_path: Path, monaco_graph_dir: Path) -> None:
    """A group whose ``compute`` yields (name, array) pairs: each array is saved, and let go,
    before the next one is computed; a name it was not declared with is refused."""
    alive: list[weakref.ref] = []

    def arrays(graph):
        for i, name in enumerate(("a", "b", "c")):
            assert all(ref() is None for ref in alive), "an earlier array is still held"
            array = np.full(1_000, float(i))
            alive.append(weakref.ref(array))
            yield name, array
            del array

    graph = RoadGraph.open(monaco_graph_dir)
    DerivedArrays("streamed", 1, ("a", "b", "c"), arrays).write(graph, tmp_path)
    directory = tmp_path / DERIVED_DIR / "streamed-v1"
    for i, name in enumerate("abc"):
        assert np.array_equal(np.load(directory / f"{name}.npy"), np.full(1_000, float(i)))
    with pytest.raises(ValueError, match="declared"):
        DerivedArrays("streamed", 2, ("a", "b"), arrays).write(graph, tmp_path)
