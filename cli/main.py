"""``meridian``: import regions, serve, run workers, manage keys and plans, write the OpenAPI docs."""

from __future__ import annotations

import json
import os
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path

import click

from cli.dev_ports import FLOWER_PORT_DEFAULT
from config.settings import PROJECT_ROOT, ConfigError, Settings
from queueing.protocol import QUEUES


def _settings() -> Settings:
    try:
        return Settings.from_env()
    except ConfigError as exc:
        raise click.ClickException(f"configuration error: {exc}") from exc


def _check_portal_settings() -> None:
    """The portal's settings (PORTAL_SECRET_KEY, SMTP_URL, ...) checked like the others: one line
    before gunicorn starts, rather than a traceback from each worker that imports the app."""
    from config.portal import PortalSettings, portal_enabled

    if not portal_enabled():
        return
    try:
        PortalSettings.from_env()
    except ConfigError as exc:
        raise click.ClickException(f"configuration error: {exc}") from exc


def _store():
    from accounts.store import AccountStore

    store = AccountStore(_settings().database_url)
    store.create_schema()
    return store


@click.group()
def main() -> None:
    """Meridian: a self-hosted location platform over OpenStreetMap data."""
    from engine.kernel_cache import prepare_environment

    prepare_environment()  # the image's compiled kernels, copied if its filesystem is read-only


# ------------------------------------------------------------------ data
@main.command("import")
@click.argument("pbf", type=click.Path(path_type=Path))
@click.option("--name", "region", help="Region name (default: from the file name).")
@click.option("--force", is_flag=True, help="Rebuild even if this file was already imported.")
@click.option(
    "--profiles",
    default="car,foot,bicycle",
    show_default=True,
    help="Travel profiles to build a routing graph for (comma-separated: car, foot, bicycle).",
)
def import_cmd(pbf: Path, region: str | None, force: bool, profiles: str) -> None:
    """Import an OSM PBF extract as a region (atomic: the previous version keeps serving on failure)."""
    from common.logs import configure
    from engine.errors import DatasetError
    from engine.ingest.pipeline import import_pbf
    from engine.progress import ImportProgress

    settings = _settings()
    configure(settings.log_format, settings.debug)
    _exit_on_termination()
    try:
        result = import_pbf(
            pbf,
            settings.data_dir,
            region,
            force=force,
            profiles=tuple(profiles.split(",")),
            progress=ImportProgress.terminal(),
        )
    except DatasetError as exc:
        raise click.ClickException(f"import failed: {exc}") from exc
    m = result.manifest
    state = "up to date" if result.skipped else f"built in {m['build_seconds']} s"
    click.echo(f"region {result.region}: version {result.version} ({state})")
    click.echo(f"  profiles             {', '.join(m.get('profiles', ['car']))}")
    for name, count in m.get("counts", {}).items():
        click.echo(f"  {name:<20} {count}")


def _exit_on_termination() -> None:
    """SIGTERM and SIGHUP (``docker stop``, ``systemctl stop``, a closed terminal) end the command
    as Ctrl-C does, by an exception: what it built so far is removed on the way out and its child
    processes are stopped, instead of the process vanishing and leaving both behind."""

    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)


@main.command("warmup")
def warmup_cmd() -> None:
    """Compile every numba kernel into $NUMBA_CACHE_DIR (the image's build step): imports a tiny
    synthetic town and runs each service once on it. Needs no settings and no dataset."""
    import logging

    from engine.warmup import build_cache

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    built = build_cache()
    click.echo(
        f"{built.compiled} kernels compiled into {built.cache_dir or 'numba default cache'} in {built.seconds} s"
    )


@main.command("regions")
def regions_cmd() -> None:
    """List the imported regions."""
    from engine.dataset import DatasetRegistry

    registry = DatasetRegistry(_settings().data_dir)
    click.echo(json.dumps(registry.summary(), indent=2))


@main.command("export")
@click.argument("region")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), required=True)
@click.option(
    "--what",
    default="graph,admin,pois",
    show_default=True,
    help="Comma-separated parts: graph (GraphML + roads.gpkg), admin, pois (GeoPackages).",
)
def export_cmd(region: str, out_dir: Path, what: str) -> None:
    """Export a region for analysts: osmnx GraphML and GeoPackages (QGIS, geopandas, networkx)."""
    from engine.dataset import DatasetRegistry
    from engine.export import export_region, parse_what

    try:
        parts = parse_what(what)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--what") from exc
    dataset = DatasetRegistry(_settings().data_dir).get(region)
    if dataset is None:
        raise click.ClickException(f"no imported region {region!r} (see `meridian regions`)")
    for part, info in export_region(dataset, out_dir, parts).items():
        counts = ", ".join(f"{k} {v}" for k, v in info.items() if k != "files")
        click.echo(f"{part}: {', '.join(str(out_dir / f) for f in info['files'])} ({counts})")


# ------------------------------------------------------------------ processes
@main.command("serve")
@click.option(
    "--host",
    help="Address to listen on (default: $BIND_HOST or 127.0.0.1; 0.0.0.0 only behind a proxy, docs/deployment.md).",
)
@click.option("--port", type=int, help="Port (default: $PORT or 3000).")
@click.option("--workers", type=int, help="gunicorn worker processes (default: $WEB_CONCURRENCY or 2).")
def serve_cmd(host: str | None, port: int | None, workers: int | None) -> None:
    """Run the web app (core API, /v1 gateway, docs, health) under gunicorn."""
    if host:
        os.environ["BIND_HOST"] = host
    if port:
        os.environ["PORT"] = str(port)
    if workers:
        os.environ["WEB_CONCURRENCY"] = str(workers)
    _settings()  # fail fast on bad configuration
    _check_portal_settings()
    conf = PROJECT_ROOT / "config" / "gunicorn.py"
    os.execvp(sys.executable, [sys.executable, "-m", "gunicorn", "-c", str(conf), "app.wsgi:app"])


@main.command("worker")
@click.option("--queues", default=",".join(QUEUES), show_default=True)
@click.option("--concurrency", type=int, help="Processes (default: $WORKER_CONCURRENCY or 2).")
@click.option("--loglevel", default="INFO")
def worker_cmd(queues: str, concurrency: int | None, loglevel: str) -> None:
    """Run a Celery worker (heavy functions: isochrones, static maps, geometry, batch geocoding;
    webhooks). Its app is ``workers.main``'s, built from the environment."""
    settings = _settings()
    args = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "workers.main",
        "worker",
        "-Q",
        queues,
        "--concurrency",
        str(concurrency or settings.worker_concurrency),
        "--loglevel",
        loglevel,
        "-n",
        f"meridian-{os.getpid()}@%h",
    ]
    os.execvp(sys.executable, args)


@main.command("monitor")
@click.option(
    "--port", type=int, envvar="FLOWER_PORT", default=FLOWER_PORT_DEFAULT, show_default="$FLOWER_PORT or 5555"
)
@click.option("--address", default="127.0.0.1", show_default=True, help="0.0.0.0 only inside a container")
def monitor_cmd(port: int, address: str) -> None:
    """Run Flower, the Celery queue monitor, behind basic auth (FLOWER_BASIC_AUTH=user:password)."""
    from cli.monitor import flower_argv

    try:
        argv = flower_argv(port, address, os.environ.get("FLOWER_BASIC_AUTH"))
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    os.execvp(argv[0], argv)


# ------------------------------------------------------------------ keys
@main.group("keys")
def keys() -> None:
    """Create, list and revoke API keys."""


def _parse_expiry(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(
            "expected an ISO 8601 date or datetime, e.g. 2027-01-31", param_hint="--expires"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@keys.command("create")
@click.option("--account", default="default", show_default=True)
@click.option("--plan", default="standard", show_default=True)
@click.option("--scopes", help="Comma-separated services this key is narrowed to.")
@click.option("--expires", help="Expiry, ISO 8601 (UTC when no offset).")
@click.option("--label", default="")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (key, secret, prefix).")
def keys_create(account, plan, scopes, expires, label, as_json) -> None:
    """Create a key; the key and its API Secret are printed once and stored only hashed."""
    from accounts.store import AccountError

    try:
        issued = _store().create_key(
            account,
            plan,
            scopes=[s.strip() for s in scopes.split(",") if s.strip()] if scopes else None,
            expires_at=_parse_expiry(expires),
            label=label,
        )
    except AccountError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(
            json.dumps(
                {
                    "key": issued.key,
                    "secret": issued.secret,
                    "prefix": issued.record.prefix,
                    "account": account,
                    "plan": plan,
                }
            )
        )
    else:
        click.echo(issued.key)
        click.echo(f"API secret (shown once): {issued.secret}", err=True)


@keys.command("list")
@click.option("--account")
def keys_list(account: str | None) -> None:
    """List keys (prefixes only; keys are never stored)."""
    for r in _store().list_keys(account):
        state = r.state()
        scopes = ",".join(r.scopes) if r.scopes is not None else "-"
        expires = r.expires_at.isoformat() if r.expires_at else "-"
        click.echo(f"{r.prefix}\t{r.account_name}\t{r.plan.name}\t{state}\tscopes={scopes}\texpires={expires}")


@keys.command("revoke")
@click.argument("key_or_prefix")
def keys_revoke(key_or_prefix: str) -> None:
    """Revoke a key (by key or prefix); effective within AUTH_CACHE_TTL seconds everywhere."""
    if not _store().revoke(key_or_prefix):
        raise click.ClickException("no such key")
    click.echo("revoked")


# ------------------------------------------------------------------ plans and usage
@main.group("plans")
def plans() -> None:
    """List and edit plans."""


def _plan_line(p) -> str:
    fail_open = "default" if p.quota_fail_open is None else str(p.quota_fail_open).lower()
    return (
        f"{p.name}\tper_minute={p.per_minute}\tper_day={p.per_day}\tper_month={p.per_month}\t"
        f"services={','.join(p.services)}\tmax_keys={p.max_keys}\tmax_matrix_cells={p.max_matrix_cells}\t"
        f"quota_fail_open={fail_open}"
    )


@plans.command("list")
def plans_list() -> None:
    for p in _store().list_plans():
        click.echo(_plan_line(p))


@plans.command("set")
@click.argument("name")
@click.option("--per-minute", type=int)
@click.option("--per-day", type=int)
@click.option("--per-month", type=int)
@click.option("--services", help="Comma-separated services, or '*' for all.")
@click.option("--description")
@click.option("--max-keys", type=int, help="Live keys per account (0 = no cap).")
@click.option(
    "--max-matrix-cells",
    type=int,
    help="Cells (sources x destinations) of one matrix request (0 = the deployment's limit).",
)
@click.option(
    "--quota-fail-open/--quota-fail-closed",
    default=None,
    help="While Redis is unreachable, serve this plan's requests uncounted, or refuse them with 503 "
    "(default: closed for free and PORTAL_DEFAULT_PLAN, else QUOTA_FAIL_OPEN).",
)
def plans_set(
    name, per_minute, per_day, per_month, services, description, max_keys, max_matrix_cells, quota_fail_open
) -> None:
    """Create or change a plan (0 = unlimited for a window)."""
    from accounts.store import AccountError

    try:
        p = _store().set_plan(
            name,
            per_minute=per_minute,
            per_day=per_day,
            per_month=per_month,
            services=[s.strip() for s in services.split(",") if s.strip()] if services else None,
            description=description,
            max_keys=max_keys,
            max_matrix_cells=max_matrix_cells,
            quota_fail_open=quota_fail_open,
        )
    except AccountError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(_plan_line(p))


@main.command("usage")
@click.argument("key_or_prefix")
@click.option("--days", type=int, default=30, show_default=True)
def usage_cmd(key_or_prefix: str, days: int) -> None:
    """Requests per service and UTC day for a key."""
    from accounts.quota import QuotaCounter
    from app.runtime import redis_client

    settings = _settings()
    record = _store().find(key_or_prefix)
    if record is None:
        raise click.ClickException("no such key")
    usage = QuotaCounter(redis_client(settings.redis_url), settings.service_name).usage(record.prefix, days)
    click.echo(
        json.dumps(
            {"key": record.prefix, "account": record.account_name, "plan": record.plan.name, "usage": usage}, indent=2
        )
    )


# ------------------------------------------------------------------ docs
@main.command("openapi")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), required=True)
def openapi_cmd(out_dir: Path) -> None:
    """Write openapi.json and a standalone Swagger UI page (index.html) that opens from disk."""
    from app import create_app
    from app.docs import standalone_html

    app = create_app(_settings())
    spec = app.extensions["openapi"].spec.to_dict()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "openapi.json").write_text(json.dumps(spec, indent=2), encoding="utf-8")
    (out_dir / "index.html").write_text(standalone_html(spec), encoding="utf-8")
    click.echo(f"wrote {out_dir / 'openapi.json'} and {out_dir / 'index.html'}")


from cli.dataset import dataset  # noqa: E402  (the `meridian dataset` group)

main.add_command(dataset)

from cli.accounts import register as _register_accounts  # noqa: E402  (after `main` exists)

_register_accounts(main)

from cli.dev import register as _register_dev  # noqa: E402  (after `main` exists)

_register_dev(main)


if __name__ == "__main__":
    main()
