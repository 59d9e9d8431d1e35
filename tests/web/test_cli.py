"""The `meridian` command: keys, plans, usage and regions, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

from config.settings import PROJECT_ROOT
from tests.fixtures_live import settings_env


def meridian(settings, *args, check=True):
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        cwd=PROJECT_ROOT,
        env=settings_env(settings),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_keys_create_list_revoke_and_use(settings, client, store):
    out = meridian(settings, "keys", "create", "--account", "cli", "--plan", "free", "--json")
    issued = json.loads(out.stdout)
    key = issued["key"]
    assert key.startswith("mrd_") and issued["secret"]
    assert client.get("/v1/geocoding?query=Aleksanterinkatu%2052", headers={"X-API-Key": key}).status_code == 200
    listing = meridian(settings, "keys", "list", "--account", "cli").stdout
    assert issued["prefix"] in listing and key not in listing and "active" in listing
    meridian(settings, "keys", "revoke", issued["prefix"])
    assert "revoked" in meridian(settings, "keys", "list", "--account", "cli").stdout
    record = store.find(key)
    assert record.revoked and record.key_hash != key and issued["secret"] not in record.secret_hash


def test_keys_create_rejects_unknown_plan_and_scope(settings):
    bad_plan = meridian(settings, "keys", "create", "--plan", "platinum", check=False)
    assert bad_plan.returncode != 0 and "unknown plan" in bad_plan.stderr
    bad_scope = meridian(settings, "keys", "create", "--scopes", "teleport", check=False)
    assert bad_scope.returncode != 0 and "unknown scope" in bad_scope.stderr


def test_keys_with_scopes_and_expiry(settings, store):
    out = meridian(
        settings,
        "keys",
        "create",
        "--account",
        "cli2",
        "--scopes",
        "geocoding,routing",
        "--expires",
        "2030-01-01",
        "--json",
    )
    record = store.find(json.loads(out.stdout)["key"])
    assert record.scopes == ("geocoding", "routing")
    assert record.expires_at.year == 2030


def test_plans_set_and_list(settings):
    meridian(
        settings, "plans", "set", "cli-plan", "--per-minute", "7", "--per-day", "70", "--services", "geocoding,suggest"
    )
    listing = meridian(settings, "plans", "list").stdout
    line = next(ln for ln in listing.splitlines() if ln.startswith("cli-plan"))
    assert "per_minute=7" in line and "per_day=70" in line and "services=geocoding,suggest" in line
    bad = meridian(settings, "plans", "set", "cli-plan", "--services", "nope", check=False)
    assert bad.returncode != 0 and "unknown service" in bad.stderr


def test_usage_reports_requests(settings, client, store):
    issued = store.create_key("usage", "pro")
    for _ in range(3):
        client.get("/v1/geocoding?query=Aleksanterinkatu%2052", headers={"X-API-Key": issued.key})
    client.application.extensions["meridian"].access.quota.settle_all()  # requests served from a reservation
    report = json.loads(meridian(settings, "usage", issued.record.prefix).stdout)
    assert sum(day.get("geocoding", 0) for day in report["usage"].values()) == 3


def test_regions_lists_samples(settings):
    regions = json.loads(meridian(settings, "regions").stdout)
    assert {r["region"] for r in regions} == {"monaco", "helsinki"}


def _serve_refused(env: dict[str, str]) -> str:
    """Run `meridian serve` with ``env``; it must exit non-zero before gunicorn starts, with one
    line on stderr and no traceback. Returns that line."""
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "serve"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def test_serve_refuses_production_without_portal_secrets_in_one_line(settings):
    """A missing PORTAL_SECRET_KEY or SMTP_URL in production stops `meridian serve` before
    gunicorn starts, with one line naming the variable (no traceback from every worker)."""
    env = settings_env(settings)
    env.update(NODE_ENV="production", PORTAL_ENABLED="true", PORT="1")  # a port it never binds
    for name in ("PORTAL_SECRET_KEY", "SMTP_URL"):
        env.pop(name, None)
    assert "SMTP_URL is required in production" in _serve_refused(env)
    env["SMTP_URL"] = "smtp://127.0.0.1:1"
    assert "PORTAL_SECRET_KEY is required in production" in _serve_refused(env)
