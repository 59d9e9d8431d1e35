"""engine/ingest/contraction_child.py: a parked graph's hierarchy built in a child process is the
hierarchy built in the import's process, comes back as maps of files, and leaves nothing behind."""

from __future__ import annotations

import io
import tempfile

import numpy as np
import pytest

from engine.ingest.contraction_child import contract_apart
from engine.progress import ImportProgress
from engine.routing import build, ch
from engine.routing.build import iter_graphs
from engine.routing.graph import ARRAYS, CH_ARRAYS
from engine.routing.profiles import CAR, FOOT
from tests.engine.test_ch import random_network


@pytest.fixture
def park_everything(tmp_path, monkeypatch):
    """Every graph parked (the tests' towns are far below PARK_MIN_TURNS), in a TMPDIR of the test's."""
    park_dir = tmp_path / "tmp"
    park_dir.mkdir()
    monkeypatch.setenv("TMPDIR", str(park_dir))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    monkeypatch.setattr(build, "PARK_MIN_TURNS", 0)
    return park_dir


def test_a_hierarchy_built_in_a_child_is_the_one_built_here(tmp_path, park_everything, monkeypatch):
    """Two profiles' graphs contracted apart equal those contracted in this process, array for
    array, while this process's own ``ch.build`` fails: the work was the child's. The hierarchy
    comes back mapped from the child's files, and the parked files are gone afterwards; the child's
    progress line reaches this process's stream."""
    path = random_network(14).write(tmp_path / "apart.osm.pbf")
    here = {name: graph for name, graph, _ in iter_graphs(path, (CAR, FOOT))}

    def not_here(*args, **kwargs):
        raise AssertionError("contracted in the import's process")

    monkeypatch.setattr(ch, "build", not_here)
    out = io.StringIO()
    progress = ImportProgress(out, live=True, interval=0.0)
    apart = {
        name: graph for name, graph, _ in iter_graphs(path, (CAR, FOOT), progress=progress, contract=contract_apart)
    }
    for profile, graph in apart.items():
        assert graph.has_ch
        assert isinstance(graph.ch_up_to, np.memmap)
        for name in ARRAYS + CH_ARRAYS:
            np.testing.assert_array_equal(
                getattr(graph, name), getattr(here[profile], name), err_msg=f"{profile} {name}"
            )
        assert graph.meta["counts"]["ch_core"] == here[profile].meta["counts"]["ch_core"]
        assert graph.meta["counts"]["ch_shortcuts"] == here[profile].meta["counts"]["ch_shortcuts"]
    assert "roads: contraction (car)" in out.getvalue() and "roads: contraction (foot)" in out.getvalue()
    assert list(park_everything.iterdir()) == []


def test_a_graph_that_stays_in_memory_is_contracted_here(tmp_path):
    """Below PARK_MIN_TURNS (nothing parked) no child is started: the hierarchy is this process's."""
    path = random_network(15).write(tmp_path / "small.osm.pbf")
    built = []
    build_here = ch.build

    def counted(*args, **kwargs):
        built.append(1)
        return build_here(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ch, "build", counted)
        [(_, graph, _)] = iter_graphs(path, (CAR,), contract=contract_apart)
    assert built == [1] and graph.has_ch and not isinstance(graph.ch_up_to, np.memmap)
