"""`make run` as a new user meets it (issue 28, items 1-3): a busy port is one line naming the
variable that moves it, before anything starts; the demo key is kept from run to run, one live at
a time, its API Secret shown once; the banner comes once /v1/health/ready answers 200, and a short
reminder once the output has settled."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from accounts.store import AccountStore
from cli.demo_key import DEMO_ACCOUNT, DEMO_LABEL, ensure_demo_key
from config.portal import mail_settings, parse_smtp_url
from config.settings import PROJECT_ROOT
from tests.fixtures_live import free_port

MERIDIAN = [str(Path(sys.executable).parent / "meridian")]  # the console script of this virtualenv


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port this test listens on, as a server left running would."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def _ports_env(**ports: int) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("PORT", "MAIL_PORT", "FLOWER_PORT"):
        env[name] = str(ports.get(name) or free_port())
    return env


def _check_ports(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MERIDIAN, "dev", "ports"], env=env, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("variable", "what"), [("PORT", "web"), ("MAIL_PORT", "mail catcher"), ("FLOWER_PORT", "Flower")]
)
def test_a_busy_port_is_one_line_naming_its_variable(busy_port: int, variable: str, what: str) -> None:
    done = _check_ports(_ports_env(**{variable: busy_port}))
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"port {busy_port} ({what}) is busy: stop what listens there or set {variable}, e.g. ")
    suggested = int(lines[0].split(f"{variable}=")[1].split()[0])
    assert suggested != busy_port


def test_free_ports_pass_silently() -> None:
    done = _check_ports(_ports_env())
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_one_port_for_two_settings_is_refused() -> None:
    port = free_port()
    done = _check_ports(_ports_env(PORT=port, FLOWER_PORT=port))
    assert done.returncode == 1
    assert done.stderr == f"PORT and FLOWER_PORT are both {port}: give each a port of its own\n"


def test_run_sh_checks_the_ports_before_starting_anything() -> None:
    commands = [
        line.strip()
        for line in (PROJECT_ROOT / "scripts" / "run.sh").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    first = next(i for i, c in enumerate(commands) if "meridian" in c or "redis" in c or "honcho" in c)
    assert commands[first] == "meridian dev ports"


def test_the_development_smtp_url_follows_mail_port() -> None:
    assert mail_settings({})[0].port == 1025
    assert mail_settings({"MAIL_PORT": "2525"})[0] == parse_smtp_url("smtp://127.0.0.1:2525")
    assert mail_settings({"MAIL_PORT": "2525", "SMTP_URL": "smtp://mail.example:25"})[0].port == 25


def test_the_mail_catcher_on_a_busy_port_says_so_in_one_line(busy_port: int, tmp_path: Path) -> None:
    env = {**os.environ, "MAIL_PORT": str(busy_port), "MAIL_DIR": str(tmp_path)}
    done = subprocess.run(
        [*MERIDIAN, "mailcatcher"], env=env, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"Error: cannot listen on 127.0.0.1:{busy_port} (Address already in use): set MAIL_PORT to a free port"
    ]


# ------------------------------------------------------------------ the demo key


@pytest.fixture
def store(tmp_path: Path) -> AccountStore:
    store = AccountStore(f"sqlite:///{tmp_path / 'accounts.db'}")
    store.create_schema()
    return store


def _live_demo_keys(store: AccountStore) -> list[str]:
    return [k.prefix for k in store.list_keys(DEMO_ACCOUNT) if k.state() == "active"]


def test_the_demo_key_is_kept_and_its_secret_shown_once(store: AccountStore, tmp_path: Path) -> None:
    path = tmp_path / "var" / "demo-key"
    first = ensure_demo_key(store, path)
    second = ensure_demo_key(store, path)
    assert first.secret is not None and second.secret is None
    assert second.key == first.key
    assert path.read_text().strip() == first.key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert _live_demo_keys(store) == [first.record.prefix]
    kept = store.find(first.key)
    assert kept is not None and kept.matches(first.key)


def test_replacing_or_losing_the_demo_key_leaves_one_live(store: AccountStore, tmp_path: Path) -> None:
    path = tmp_path / "demo-key"
    first = ensure_demo_key(store, path)
    replaced = ensure_demo_key(store, path, replace=True)
    assert replaced.secret is not None and replaced.key != first.key
    assert _live_demo_keys(store) == [replaced.record.prefix]
    path.unlink()  # e.g. var/ removed by hand, the database kept
    again = ensure_demo_key(store, path)
    assert again.key not in (first.key, replaced.key)
    assert _live_demo_keys(store) == [again.record.prefix]
    store.revoke(again.key)  # revoked in the portal or with `meridian keys revoke`
    assert ensure_demo_key(store, path).secret is not None
    assert len(_live_demo_keys(store)) == 1


def test_keys_of_earlier_runs_are_revoked_and_other_keys_kept(store: AccountStore, tmp_path: Path) -> None:
    leftovers = [store.create_key(DEMO_ACCOUNT, label=DEMO_LABEL) for _ in range(3)]  # the old run.sh
    own = store.create_key(DEMO_ACCOUNT, label="my own")
    other = store.create_key("someone", label=DEMO_LABEL)
    demo = ensure_demo_key(store, tmp_path / "demo-key")
    assert demo.revoked == len(leftovers)
    assert sorted(_live_demo_keys(store)) == sorted([demo.record.prefix, own.record.prefix])
    untouched = store.find(other.key)
    assert untouched is not None and untouched.state() == "active"


def test_the_demo_key_step_run_twice_yields_one_live_key(tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'accounts.db'}"}
    path = tmp_path / "demo-key"
    runs = [
        subprocess.run(
            [*MERIDIAN, "dev", "demo-key", "--file", str(path)],
            env=env,
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        for _ in range(2)
    ]
    assert runs[0].stdout == runs[1].stdout == path.read_text()
    assert "API secret (shown once): " in runs[0].stderr and runs[1].stderr == ""
    assert len(_live_demo_keys(AccountStore(env["DATABASE_URL"]))) == 1


# ------------------------------------------------------------------ the banner after readiness

# Stands in for the Procfile's processes: start-up lines, /v1/health/ready answering 503 (with the
# reason, as app/health.py does) twice and then 200, one late line, then quiet, then exit.
STAND_IN = textwrap.dedent(
    """
    import json, sys, threading, time
    from http.server import BaseHTTPRequestHandler, HTTPServer

    asked = []

    class Health(BaseHTTPRequestHandler):
        def do_GET(self):
            asked.append(self.path)
            ready = len(asked) > 2
            body = json.dumps({"statusCode": 503, "message": "not ready: workers (none yet)"}).encode()
            self.send_response(200 if ready else 503)
            self.send_header("Content-Length", "0" if ready else str(len(body)))
            self.end_headers()
            if not ready:
                self.wfile.write(body)
            print(f"web.1 | GET {self.path} {200 if ready else 503}", flush=True)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", int(sys.argv[1])), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("web.1 | booting", flush=True)
    while len(asked) < 3:
        time.sleep(0.05)
    time.sleep(0.3)
    print("worker.1 | late line", flush=True)
    time.sleep(float(sys.argv[2]))
    print("system | done", flush=True)
    """
)


@pytest.mark.timeout(60)
def test_the_banner_waits_for_readiness_and_a_reminder_follows_the_last_output(tmp_path: Path) -> None:
    from cli.dev_run import SETTLE_S

    port = free_port()
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    env = {**os.environ, "PORT": str(port), "DATABASE_URL": f"sqlite:///{tmp_path / 'accounts.db'}"}
    env.pop("BIND_HOST", None)
    key_file = tmp_path / "demo-key"
    done = subprocess.run(
        [*MERIDIAN, "dev", "run", "--key-file", str(key_file), "--", sys.executable, str(script), str(port)]
        + [str(SETTLE_S + 2)],
        env=env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=45,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    key = key_file.read_text().strip()
    order = [
        "web.1 | booting",
        "web.1 | GET /v1/health/ready 503",
        f"Meridian is ready on http://localhost:{port}",
        f"API key (plan standard): {key}",
        "API Secret (shown once",
        f"curl -s -H 'X-API-Key: {key}' 'http://localhost:{port}/v1/geocoding?",
        "worker.1 | late line",
        f"--- API key {key}",
        "system | done",
    ]
    positions = [out.find(text) for text in order]
    assert -1 not in positions, out
    assert positions == sorted(positions), out
    # the stand-in's own log line of the 200 may come through before or after the banner
    assert "web.1 | GET /v1/health/ready 200" in out, out
    assert out.count("Meridian is ready") == 2  # the banner, and the reminder's first line
