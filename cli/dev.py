"""``meridian dev ...``: what ``make run`` (``scripts/run.sh``) is made of, for a development
checkout: ``ports`` (are PORT, MAIL_PORT and FLOWER_PORT free?), ``demo-key`` (the demo key kept
in ``var/demo-key``) and ``run`` (the Procfile's processes, announced once they answer).
Registered on the main group by ``cli/main.py``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cli.demo_key import DEMO_KEY_FILE, DemoKey, ensure_demo_key


@click.group("dev")
def dev() -> None:
    """Development helpers behind `make run`."""


@dev.command("ports")
def dev_ports() -> None:
    """Exit 1 with one line when a port `make run` needs is busy, naming the variable to change."""
    from cli.dev_ports import problem

    line = problem()
    if line is not None:
        click.echo(line, err=True)
        sys.exit(1)


def _demo_key(path: Path, replace: bool = False) -> DemoKey:
    from cli.main import _store

    return ensure_demo_key(_store(), path, replace=replace)


@dev.command("demo-key")
@click.option("--replace", is_flag=True, help="Revoke the kept key; create a new key and API Secret.")
@click.option("--file", "path", type=click.Path(path_type=Path), default=DEMO_KEY_FILE, show_default=True)
def dev_demo_key(replace: bool, path: Path) -> None:
    """Print the demo key `make run` uses (created when there is no live one; its API Secret is
    printed, on stderr, only then)."""
    demo = _demo_key(path, replace)
    click.echo(demo.key)
    if demo.secret is not None:
        click.echo(f"API secret (shown once): {demo.secret}", err=True)


@dev.command("run", context_settings={"ignore_unknown_options": True})
@click.option("--key-file", type=click.Path(path_type=Path), default=DEMO_KEY_FILE, show_default=True)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def dev_run(key_file: Path, command: tuple[str, ...]) -> None:
    """Run COMMAND (e.g. `honcho start -f Procfile`) and print the URLs, the demo key and curl
    lines once GET /v1/health/ready answers 200; a short reminder when the output settles."""
    from cli.dev_banner import RunInfo, banner, reminder
    from cli.dev_ports import FLOWER_PORT, MAIL_PORT, WEB_PORT, configured
    from cli.dev_run import run
    from cli.main import _settings
    from config.settings import ConfigError

    settings = _settings()
    try:
        ports = configured()
    except ConfigError as exc:
        raise click.ClickException(f"configuration error: {exc}") from exc
    info = RunInfo(
        port=ports[WEB_PORT],
        mail_port=ports[MAIL_PORT],
        flower_port=ports[FLOWER_PORT],
        redis_url=settings.redis_url,
        demo=_demo_key(key_file),
        key_file=key_file,
    )
    sys.exit(run(list(command), info.port, banner(info), reminder(info), sys.stdout.buffer))


def register(main: click.Group) -> None:
    main.add_command(dev)
