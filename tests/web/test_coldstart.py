"""A web process with an empty numba cache compiles before it says ready: ``/v1/health/ready``
answers 503 naming ``warm`` while it compiles, then 200; the first route after that compiles
nothing (the process's numba compile count, in the ``warm`` check, does not move)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
import requests

from tests.fixtures_live import free_port, start_gunicorn, stop

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(400)]

WARM_TIMEOUT_S = 300.0


def _monaco_only(data_dir: Path, root: Path) -> Path:
    """A DATA_DIR of the test's own with a copy of Monaco's current version (a shared sample
    directory may get a new version, and lose an old one, while the server warms)."""
    version = (data_dir / "regions" / "monaco" / "current").resolve()
    region = root / "regions" / "monaco"
    shutil.copytree(version, region / "versions" / version.name)
    (region / "current").symlink_to(Path("versions") / version.name)
    return root


def test_ready_only_once_warm_and_no_request_compiles(settings, store, api_key, celery_worker, tmp_path):
    cache = tmp_path / "numba"  # empty: every kernel really compiles
    own = settings.with_overrides(data_dir=_monaco_only(settings.data_dir, tmp_path / "data"))
    port = free_port()
    proc = start_gunicorn(own, port, tmp_path / "gunicorn.log", workers=1, NUMBA_CACHE_DIR=str(cache))
    base = f"http://127.0.0.1:{port}"
    try:
        not_ready: list[str] = []
        deadline = time.monotonic() + WARM_TIMEOUT_S
        while True:
            resp = requests.get(f"{base}/v1/health/ready", timeout=10)
            if resp.status_code == 200:
                break
            assert resp.status_code == 503 and resp.headers["Retry-After"]
            not_ready.append(resp.json()["message"])
            assert time.monotonic() < deadline, not_ready[-3:]
            time.sleep(0.25)
        assert not_ready and "warm (" in not_ready[0], not_ready[:3]
        warm = resp.json()["checks"]["warm"]
        assert warm["ok"] and warm["phase"] == "warm" and warm["compiled"] > 0, warm
        assert list(cache.rglob("*.nbi")), "the warm-up wrote numba's cache"

        key = {"X-Api-Key": api_key}
        route = requests.get(
            f"{base}/v1/routing",
            params={"origin": "43.7312,7.4197", "destination": "43.7406,7.4270", "alternatives": "1"},
            headers=key,
            timeout=30,
        )
        assert route.status_code == 200 and route.json()["routes"], route.text
        snap = requests.get(
            f"{base}/v1/snaptoroad", params={"points": "43.7312,7.4197|43.7330,7.4210"}, headers=key, timeout=30
        )
        assert snap.status_code == 200, snap.text
        after = requests.get(f"{base}/v1/health/ready", timeout=10).json()["checks"]["warm"]
        assert after["compiled_total"] == warm["compiled_total"], "a request compiled a kernel"
    finally:
        stop(proc)
