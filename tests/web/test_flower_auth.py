"""Flower behind auth (issue 26, finding 10): ``meridian monitor`` refuses to start without
``FLOWER_BASIC_AUTH`` and, started with it, answers 401 to a request without those credentials."""

from __future__ import annotations

import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from cli.monitor import check_basic_auth
from config.settings import PROJECT_ROOT, ConfigError
from tests.fixtures_live import free_port, settings_env, stop

pytestmark = pytest.mark.integration

MERIDIAN = str(Path(sys.executable).parent / "meridian")


@pytest.mark.parametrize("value", [None, "", "admin", "admin:", ":long-enough-password", "admin:short"])
def test_weak_or_missing_credentials_are_refused(value):
    with pytest.raises(ConfigError, match="FLOWER_BASIC_AUTH"):
        check_basic_auth(value)


def test_monitor_does_not_start_without_credentials(settings):
    env = settings_env(settings)
    env.pop("FLOWER_BASIC_AUTH", None)
    done = subprocess.run(
        [MERIDIAN, "monitor", "--port", str(free_port())],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode != 0 and "FLOWER_BASIC_AUTH is required" in done.stderr


def test_monitor_asks_for_its_credentials(settings, tmp_path):
    port = free_port()
    password = secrets.token_hex(16)
    log = open(tmp_path / "flower.log", "wb")
    proc = subprocess.Popen(
        [MERIDIAN, "monitor", "--port", str(port)],
        cwd=PROJECT_ROOT,
        env=settings_env(settings, FLOWER_BASIC_AUTH=f"ops:{password}"),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "flower.log").read_text()[-2000:]
            try:
                anonymous = requests.get(f"{base}/tasks", timeout=5)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline, "Flower did not start"
                time.sleep(0.2)
        assert anonymous.status_code == 401
        assert requests.get(f"{base}/api/tasks", timeout=5).status_code == 401
        assert requests.get(f"{base}/tasks", auth=("ops", "wrong-password-1"), timeout=5).status_code == 401
        assert requests.get(f"{base}/tasks", auth=("ops", password), timeout=10).status_code == 200
        assert password not in " ".join(proc.args)  # Flower reads it from the environment
    finally:
        stop(proc)
        log.close()
