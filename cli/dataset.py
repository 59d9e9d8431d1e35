"""``meridian dataset``: publish imported versions to a dataset store and pull them on other nodes."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from config.settings import ConfigError, Settings

if TYPE_CHECKING:
    from engine.store import DatasetStore


def _settings() -> Settings:
    try:
        return Settings.from_env()
    except ConfigError as exc:
        raise click.ClickException(f"configuration error: {exc}") from exc


def _store(url: str | None, settings: Settings) -> DatasetStore:
    from engine.store import DatasetStore, StoreError

    url = url or settings.dataset_store
    if not url:
        raise click.UsageError("no store given: pass --to/--from STORE or set DATASET_STORE")
    try:
        return DatasetStore(url, **settings.dataset_store_options)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from exc


@click.group("dataset")
def dataset() -> None:
    """Publish datasets to a store (directory or s3://) and pull them on serving nodes."""


@dataset.command("publish")
@click.argument("region")
@click.option("--to", "store_url", metavar="STORE", help="Directory, file:// or s3:// URL (default: $DATASET_STORE).")
@click.option("--version", help="A version in DATA_DIR (default: the current one).")
@click.option("--no-promote", is_flag=True, help="Upload only; nodes keep serving the store's latest version.")
def publish_cmd(region: str, store_url: str | None, version: str | None, no_promote: bool) -> None:
    """Upload REGION's current (or --version) dataset with per-file SHA-256 and make it the latest."""
    from engine import layout
    from engine.store import StoreError, check_name

    settings = _settings()
    store = _store(store_url, settings)
    try:
        check_name(region, "region")
        if version:
            version_dir = layout.versions_dir(settings.data_dir, region) / check_name(version, "version")
        else:
            current = layout.current_link(settings.data_dir, region)
            if not current.exists():
                raise StoreError(f"no imported region {region!r} in {settings.data_dir} (see `meridian regions`)")
            version_dir = current.resolve()
        if not version_dir.is_dir():
            raise StoreError(f"no version {version!r} of {region} in {settings.data_dir}")
        result = store.publish(version_dir, promote=not no_promote)
    except StoreError as exc:
        raise click.ClickException(f"publish failed: {exc}") from exc
    state = "uploaded" if result.uploaded else "already in the store"
    click.echo(f"region {result.region}: version {result.version} {state} ({result.files} files, {result.bytes} bytes)")
    click.echo("latest: unchanged" if no_promote else f"latest: {result.version}")


@dataset.command("pull")
@click.argument("region")
@click.option("--from", "store_url", metavar="STORE", help="Directory, file:// or s3:// URL (default: $DATASET_STORE).")
@click.option("--version", help="A published version (default: the store's latest).")
def pull_cmd(region: str, store_url: str | None, version: str | None) -> None:
    """Download REGION into DATA_DIR, verify every file's SHA-256, then switch `current` atomically."""
    from engine.store import StoreError

    settings = _settings()
    store = _store(store_url, settings)
    try:
        result = store.pull(region, settings.data_dir, version)
    except StoreError as exc:
        raise click.ClickException(f"pull failed: {exc}") from exc
    if result.pulled:
        click.echo(
            f"region {result.region}: version {result.version} pulled and current "
            f"({result.files} files, {result.bytes} bytes, {result.seconds:.1f} s)"
        )
    else:
        click.echo(f"region {result.region}: version {result.version} (up to date)")


@dataset.command("list")
@click.option("--from", "store_url", metavar="STORE", help="Directory, file:// or s3:// URL (default: $DATASET_STORE).")
def list_cmd(store_url: str | None) -> None:
    """Regions in the store, their published versions and the latest one."""
    from engine.store import StoreError

    settings = _settings()
    store = _store(store_url, settings)
    try:
        listing = [{"region": r, "latest": store.latest(r), "versions": store.versions(r)} for r in store.regions()]
    except StoreError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(json.dumps(listing, indent=2))


@dataset.command("promote")
@click.argument("region")
@click.argument("version")
@click.option("--to", "store_url", metavar="STORE", help="Directory, file:// or s3:// URL (default: $DATASET_STORE).")
def promote_cmd(region: str, version: str, store_url: str | None) -> None:
    """Make a published VERSION the one nodes serve (roll forward or back)."""
    from engine.store import StoreError

    settings = _settings()
    store = _store(store_url, settings)
    try:
        store.promote(region, version)
    except StoreError as exc:
        raise click.ClickException(f"promote failed: {exc}") from exc
    click.echo(f"region {region}: latest is now {version}")
