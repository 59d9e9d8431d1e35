"""``meridian import`` runs for hours on a country in a process (and a spawned child) that load
``cli.main``: that module and the logs it configures load neither the web app nor the accounts'
database layer, whose ~180 MB would count in every stage's peak."""

from __future__ import annotations

import json
import subprocess
import sys

from config.settings import PROJECT_ROOT

HEAVY = ("app", "flask", "sqlalchemy", "accounts.store", "argon2", "engine.geofence")


def test_the_command_line_and_its_logs_load_no_web_app_and_no_accounts():
    probe = (
        "import json, sys, cli.main, common.logs, engine.ingest.pipeline;"
        f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(out.stdout) == []
