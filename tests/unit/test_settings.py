"""Settings from the environment: defaults from the spec, clear errors naming the variable."""

from __future__ import annotations

import subprocess
import sys

import pytest

from config.settings import PROJECT_ROOT, ConfigError, Settings


def test_spec_defaults():
    s = Settings.from_env({})
    assert (s.port, s.log_format, s.debug, s.environment, s.service_name) == (
        3000,
        "text",
        False,
        "development",
        "meridian",
    )
    assert s.service_base_url is None and not s.remote_backend


def test_values_are_read():
    s = Settings.from_env(
        {
            "PORT": "8080",
            "LOG_FORMAT": "JSON",
            "DEBUG": "true",
            "NODE_ENV": "production",
            "SERVICE_BASE_URL": "http://core:3000/services/v2/json",
            "SERVICE_API_KEY": "k",
            "REDIS_URL": "redis://r:6379/2",
            "DATA_DIR": "/srv/data",
            "SERVICE_NAME": "acme",
        }
    )
    assert (s.port, s.log_format, s.debug, s.environment) == (8080, "json", True, "production")
    assert s.remote_backend and s.redis_url == "redis://r:6379/2" and str(s.data_dir) == "/srv/data"
    assert s.service_name == "acme"


@pytest.mark.parametrize(
    "env,variable",
    [
        ({"PORT": "http"}, "PORT"),
        ({"PORT": "70000"}, "PORT"),
        ({"LOG_FORMAT": "xml"}, "LOG_FORMAT"),
        ({"DEBUG": "maybe"}, "DEBUG"),
        ({"NODE_ENV": "staging"}, "NODE_ENV"),
        ({"SERVICE_BASE_URL": "http://core/services/v2/json"}, "SERVICE_API_KEY"),
        ({"SERVICE_SUGGEST_URL": "http://core/suggest/json"}, "SERVICE_API_KEY"),
        ({"SERVICE_BASE_URL": "core:3000", "SERVICE_API_KEY": "k"}, "SERVICE_BASE_URL"),
        ({"REDIS_URL": "http://x"}, "REDIS_URL"),
        ({"DATABASE_URL": "meridian.db"}, "DATABASE_URL"),
        ({"SERVICE_NAME": "a b"}, "SERVICE_NAME"),
        ({"BACKEND_RETRIES": "-1"}, "BACKEND_RETRIES"),
    ],
)
def test_invalid_settings_name_the_variable(env, variable):
    with pytest.raises(ConfigError, match=variable):
        Settings.from_env(env)


def test_serve_fails_fast_with_message():
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "serve"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "SERVICE_BASE_URL": "http://core/x"},
    )
    assert proc.returncode != 0
    assert "configuration error" in proc.stderr and "SERVICE_API_KEY" in proc.stderr
