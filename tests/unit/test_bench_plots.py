"""bench/plots.py: the scaling figure from bench.scaling's results."""

from __future__ import annotations

from bench.plots import scaling_figure


def _size(nodes: int, seconds: float, mb: float, route_ms: float) -> dict:
    return {
        "osm_nodes": nodes,
        "import": {"seconds": seconds, "peak_rss_mb": mb},
        "query": {"route_ms": {"p50": route_ms, "p95": route_ms * 1.4}},
    }


def test_scaling_figure_is_a_png(tmp_path):
    doc = {
        "import_and_services": [
            _size(10_000, 2.5, 229.0, 0.12),
            _size(100_000, 25.0, 544.0, 0.45),
            {"osm_nodes": 1_000_000, "error": "import timed out"},
        ]
    }
    out = scaling_figure(doc, tmp_path / "scaling.png")
    assert out == tmp_path / "scaling.png"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_no_figure_without_a_measured_size(tmp_path):
    assert scaling_figure({"import_and_services": [{"osm_nodes": 10, "error": "x"}]}, tmp_path / "s.png") is None
    assert not (tmp_path / "s.png").exists()
