"""bench/throughput.py without wrk: the wrk script and the median of rounds."""

from __future__ import annotations

from bench.throughput import lua_script, median_of


def test_median_of_rounds_keeps_each_round():
    rounds = [
        {"requests_per_s": 2400.0, "p50_ms": 0.39, "non_2xx": 0},
        {"requests_per_s": 2600.0, "p50_ms": 0.36, "non_2xx": 1},
        {"requests_per_s": 2500.0, "p50_ms": 0.41, "non_2xx": 0},
    ]
    assert median_of(rounds) == {
        "requests_per_s": 2500.0,
        "p50_ms": 0.39,
        "p50_ms_rounds": [0.39, 0.36, 0.41],
        "non_2xx": 1,
    }


def test_median_of_rounds_without_a_p50():
    assert median_of([{"requests_per_s": 10.0, "p50_ms": None, "non_2xx": 0}])["p50_ms"] is None


def test_lua_script_cycles_through_the_paths_with_the_headers():
    script = lua_script(["/a?x=1", "/b"], {"X-API-Key": "k"})
    assert 'wrk.headers["X-API-Key"] = "k"' in script
    assert 'local paths = {"/a?x=1","/b"}' in script and "i % #paths + 1" in script
