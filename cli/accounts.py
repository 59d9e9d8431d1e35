"""``meridian accounts ...`` (the operator's side of the portal's accounts) and
``meridian mailcatcher`` (the development mail server). Registered on the main group by
``cli/main.py``."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from config.settings import ConfigError

if TYPE_CHECKING:
    from accounts.users import User, UserDirectory

# The accounts' modules (SQLAlchemy, the password hasher, the fences' kernels) are imported by the
# commands that use them: every ``meridian`` command loads this module, ``meridian import`` too,
# whose processes would otherwise carry them through a country's import.


def _directory() -> UserDirectory:
    from accounts.store import AccountStore
    from accounts.users import UserDirectory
    from cli.main import _settings

    store = AccountStore(_settings().database_url)
    store.create_schema()
    return UserDirectory(store)


def _user(users: UserDirectory, email: str) -> User:
    user = users.find(email)
    if user is None:
        raise click.ClickException(f"no account with e-mail or name {email!r}")
    return user


def _describe(user: User, active_keys: int) -> dict[str, object]:
    return {
        "id": user.id,
        "name": user.name,
        "email": user.email,
        "verified": user.verified,
        "role": user.role,
        "disabled": user.disabled,
        "plan": user.plan,
        "active_keys": active_keys,
        "created_at": user.created_at.isoformat() if user.created_at else None,
    }


@click.group("accounts")
def accounts() -> None:
    """List and manage portal accounts (by e-mail address, or account name)."""


@accounts.command("list")
@click.option("--json", "as_json", is_flag=True)
def accounts_list(as_json: bool) -> None:
    users = _directory()
    listed = users.list()
    key_counts = users.key_counts(u.id for u in listed)
    rows = [_describe(u, key_counts.get(u.id, 0)) for u in listed]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        flags = ",".join(
            f
            for f, on in (("verified", r["verified"]), ("disabled", r["disabled"]), ("admin", r["role"] == "admin"))
            if on
        )
        click.echo(f"{r['id']}\t{r['email'] or '-'}\t{r['name']}\tplan={r['plan']}\tkeys={r['active_keys']}\t{flags}")


@accounts.command("show")
@click.argument("email")
def accounts_show(email: str) -> None:
    users = _directory()
    user = _user(users, email)
    info = _describe(user, users.key_count(user.id))
    info["keys"] = [
        {
            "prefix": k.prefix,
            "label": k.label,
            "plan": k.plan.name,
            "scopes": list(k.scopes) if k.scopes is not None else None,
            "state": k.state(),
            "expires_at": k.expires_at.isoformat() if k.expires_at else None,
        }
        for k in users.store.list_keys(str(info["name"]))
    ]
    click.echo(json.dumps(info, indent=2))


@accounts.command("verify")
@click.argument("email")
def accounts_verify(email: str) -> None:
    """Mark the address verified without the mail."""
    users = _directory()
    users.mark_verified(_user(users, email).id)
    click.echo("verified")


@accounts.command("disable")
@click.argument("email")
@click.option("--enable", is_flag=True, help="Enable the account again.")
def accounts_disable(email: str, enable: bool) -> None:
    """Disable an account: its keys answer 401 within AUTH_CACHE_TTL, it cannot sign in."""
    users = _directory()
    users.set_disabled(_user(users, email).id, not enable)
    click.echo("enabled" if enable else "disabled")


@accounts.command("set-plan")
@click.argument("email")
@click.argument("plan")
def accounts_set_plan(email: str, plan: str) -> None:
    """Move the account and all its keys to PLAN."""
    from accounts.store import AccountError

    users = _directory()
    try:
        moved = users.set_plan(_user(users, email).id, plan)
    except AccountError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"plan {plan} ({moved} keys)")


@accounts.command("promote")
@click.argument("email")
@click.option("--demote", is_flag=True, help="Back to the user role.")
def accounts_promote(email: str, demote: bool) -> None:
    """Give the account the admin role (the portal's admin view)."""
    users = _directory()
    users.set_role(_user(users, email).id, "user" if demote else "admin")
    click.echo("user" if demote else "admin")


@click.command("mailcatcher")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, help="Default: MAIL_PORT or 1025 (where the development SMTP_URL points).")
@click.option("--dir", "directory", type=click.Path(path_type=Path), help="Default: MAIL_DIR or var/mail.")
def mailcatcher(host: str, port: int | None, directory: Path | None) -> None:
    """Development SMTP server: stores every message under var/mail/ (relays nothing)."""
    from cli.mailcatcher import start
    from config.portal import PortalSettings, mail_port

    try:
        port = port or mail_port()
        target = directory or PortalSettings.from_env().mail_dir
    except ConfigError as exc:
        raise click.ClickException(f"configuration error: {exc}") from exc
    try:
        controller = start(target, host, port)
    except OSError as exc:  # asyncio's message repeats the address: the errno's says enough
        why = os.strerror(exc.errno) if exc.errno else str(exc)
        raise click.ClickException(f"cannot listen on {host}:{port} ({why}): set MAIL_PORT to a free port") from exc
    click.echo(f"mail catcher on smtp://{host}:{port}, messages in {target}")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        controller.stop()


def register(main: click.Group) -> None:
    main.add_command(accounts)
    main.add_command(mailcatcher)
