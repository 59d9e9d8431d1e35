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
        ({"MERIDIAN_WEBHOOK_MAX_RETRIES": "many"}, "MERIDIAN_WEBHOOK_MAX_RETRIES"),
        ({"MERIDIAN_WEBHOOK_BACKOFF_S": "-1"}, "MERIDIAN_WEBHOOK_BACKOFF_S"),
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


def test_webhook_retry_policy_is_read():
    s = Settings.from_env({"MERIDIAN_WEBHOOK_MAX_RETRIES": "1", "MERIDIAN_WEBHOOK_BACKOFF_S": "0.5"})
    assert (s.webhook_max_retries, s.webhook_backoff_s) == (1, 0.5)
    assert (Settings.from_env({}).webhook_max_retries, Settings.from_env({}).webhook_backoff_s) == (6, 2.0)


# Modules the web process imports: none may read the environment when imported, so a bad value
# fails where the Settings are built (create_app, `meridian serve`), with its message.
WEB_MODULES = [
    "app.runtime",
    "app.dispatch",
    "app.jobs",
    "app.metrics",
    "app.functions.geofencing",
    "app.functions.staticmap",
    "app.functions.batch",
    "app.functions.jobs",
    "workers.celery_app",
    "tasks.webhooks",
]
BAD_ENV = {
    "PATH": "/usr/bin:/bin",
    "WEB_CONCURRENCY": "lots",
    "WORKER_CONCURRENCY": "0",
    "REDIS_URL": "http://not-redis",
    "MERIDIAN_WEBHOOK_MAX_RETRIES": "many",
}


def _python(code: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120, env=env
    )


def test_importing_route_modules_with_a_bad_environment_does_not_fail():
    code = "import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m)"
    proc = _python(code, BAD_ENV, *WEB_MODULES)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # the same environment stops the web where its Settings are built, naming the variable
    proc = _python("import app.wsgi", BAD_ENV)
    assert proc.returncode != 0 and "ConfigError" in proc.stderr


def test_the_worker_entry_point_fails_fast_naming_the_variable():
    proc = _python("import workers.main", {"PATH": "/usr/bin:/bin", "WEB_CONCURRENCY": "lots"})
    assert proc.returncode != 0
    assert "ConfigError" in proc.stderr and "WEB_CONCURRENCY" in proc.stderr


def test_the_worker_entry_point_registers_every_task():
    proc = _python(
        "import workers.main as m; m.app.loader.import_default_modules(); "
        "print(' '.join(sorted(t for t in m.app.tasks if t.startswith('meridian.'))))",
        {"PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == [
        "meridian.geocode_chunk",
        "meridian.geocode_many",
        "meridian.geofence_webhook",
        "meridian.heavy",
        "meridian.heavy_job",
        "meridian.matrix_job",
        "meridian.ping",
        "meridian.send_mail",
    ]
