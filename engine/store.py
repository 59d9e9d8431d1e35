"""A dataset store: where an operator publishes imported versions and every node pulls them.

The store is a directory (a shared volume) or S3-compatible object storage, reached through fsspec
(``s3://bucket/prefix`` needs s3fs). Its layout::

    STORE/<region>/versions/<version>/...            the version directory's files, as imported
    STORE/<region>/versions/<version>/published.json every file's path, size and SHA-256; written
                                                     after the files, so it marks a complete upload
    STORE/<region>/latest.json                       {"version": ...}: what nodes should serve;
                                                     written last, in one put

A pull downloads into a hidden staging directory beside the region's versions, checks every file's
size and SHA-256 against ``published.json`` and the dataset manifest's region, version and format,
renames the staging directory into place and moves ``current`` with the same atomic swap as
``meridian import``: a node never serves a half-pulled version. Pulls of one region on one
``DATA_DIR`` are serialised by a file lock (web and worker processes of a node share the directory).

Everything read from the store is treated as untrusted: region and version names and file paths are
checked before anything is written under ``DATA_DIR``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

import fsspec
from fsspec.spec import AbstractFileSystem

from engine import layout
from engine.errors import DatasetError
from engine.identical_files import hard_link, sha256_of
from engine.ingest.pipeline import prune_old_versions, swap_current

PUBLISHED = "published.json"
LATEST = "latest.json"
STORE_FORMAT = 1
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")  # region and version names
MAX_FILES = 100_000  # entries in one published.json
MAX_INDEX_BYTES = 16 * 1024 * 1024  # published.json / latest.json read from the store
CHUNK = 1 << 20


class StoreError(DatasetError):
    """The store is unreachable, incomplete or inconsistent (the message says which)."""


@dataclass(frozen=True)
class FileEntry:
    path: str  # POSIX path relative to the version directory
    bytes: int
    sha256: str


@dataclass(frozen=True)
class PublishResult:
    region: str
    version: str
    files: int
    bytes: int
    uploaded: bool  # False when the store already held this version complete


@dataclass(frozen=True)
class PullResult:
    region: str
    version: str
    files: int
    bytes: int
    pulled: bool  # False when this version was already served from DATA_DIR
    seconds: float


def check_name(value: str, what: str) -> str:
    if not isinstance(value, str) or not NAME_RE.match(value) or value in (".", ".."):
        raise StoreError(f"invalid {what} name {value!r}: letters, digits, '-', '_', '.' (at most 128)")
    return value


def check_relative_path(value: object) -> str:
    """A file path from ``published.json``: relative, normalised, inside the version directory."""
    if not isinstance(value, str) or not value or "\\" in value or "\x00" in value:
        raise StoreError(f"invalid file path in {PUBLISHED}: {value!r}")
    parts = PurePosixPath(value).parts
    if value.startswith("/") or any(p in ("", ".", "..") for p in parts) or "/".join(parts) != value:
        raise StoreError(f"invalid file path in {PUBLISHED}: {value!r}")
    return value


def list_version_files(version_dir: Path) -> list[FileEntry]:
    """Every regular file of a version directory, sorted, with size and SHA-256."""
    entries = []
    digests: dict[tuple[int, int], str] = {}  # a file linked under several paths is read once
    for path in sorted(p for p in version_dir.rglob("*") if p.is_file()):
        rel = path.relative_to(version_dir).as_posix()
        stat = path.stat()
        inode = (stat.st_dev, stat.st_ino)
        if inode not in digests:
            digests[inode] = sha256_of(path)
        entries.append(FileEntry(rel, stat.st_size, digests[inode]))
    return entries


def parse_published(raw: bytes, region: str, version: str) -> list[FileEntry]:
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise StoreError(f"{region}/{version}: {PUBLISHED} is not JSON") from exc
    if not isinstance(doc, dict) or doc.get("region") != region or doc.get("version") != version:
        raise StoreError(f"{region}/{version}: {PUBLISHED} names another region or version")
    files = doc.get("files")
    if not isinstance(files, list) or not files or len(files) > MAX_FILES:
        raise StoreError(f"{region}/{version}: {PUBLISHED} has no valid file list")
    entries: list[FileEntry] = []
    seen: set[str] = set()
    for item in files:
        if not isinstance(item, dict):
            raise StoreError(f"{region}/{version}: {PUBLISHED} has an invalid file entry")
        path = check_relative_path(item.get("path"))
        size, digest = item.get("bytes"), item.get("sha256")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise StoreError(f"{region}/{version}: invalid size for {path}")
        if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise StoreError(f"{region}/{version}: invalid sha256 for {path}")
        if path in seen:
            raise StoreError(f"{region}/{version}: {path} listed twice")
        seen.add(path)
        entries.append(FileEntry(path, size, digest))
    if layout.MANIFEST not in seen:
        raise StoreError(f"{region}/{version}: {PUBLISHED} does not list {layout.MANIFEST}")
    return entries


@contextlib.contextmanager
def region_lock(data_dir: Path, region: str) -> Iterator[None]:
    """One pull of a region at a time on this DATA_DIR (processes and threads alike)."""
    region_dir = layout.region_dir(data_dir, region)
    region_dir.mkdir(parents=True, exist_ok=True)
    with open(region_dir / ".pull.lock", "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def local_version(data_dir: Path, region: str) -> str | None:
    """The version ``current`` points at on this DATA_DIR, or None."""
    current = layout.current_link(data_dir, region)
    return current.resolve().name if current.exists() else None


class DatasetStore:
    """Publish to and pull from one store URL (a directory path, ``file://``, ``s3://`` ...)."""

    def __init__(self, url: str, **storage_options: Any) -> None:
        if not url or not url.strip():
            raise StoreError("empty dataset store URL")
        self.url = url.strip()
        try:
            fs, root = fsspec.url_to_fs(self.url, **storage_options)
        except (ImportError, ValueError) as exc:
            raise StoreError(f"cannot open dataset store {self.url!r}: {exc}") from exc
        self.fs: AbstractFileSystem = fs
        self.root = str(root).rstrip("/")

    # -- paths in the store
    def _path(self, *parts: str) -> str:
        return "/".join((self.root, *parts))

    def _version_path(self, region: str, version: str, *parts: str) -> str:
        return self._path(region, "versions", version, *parts)

    # -- small JSON documents
    def _read_json(self, path: str) -> bytes | None:
        try:
            size = self.fs.size(path)
            if size is not None and size > MAX_INDEX_BYTES:
                raise StoreError(f"{path} is larger than {MAX_INDEX_BYTES} bytes")
            return bytes(self.fs.cat_file(path))
        except FileNotFoundError:
            return None

    def _write_json(self, path: str, doc: dict[str, Any]) -> None:
        """Write in one step for readers: a temporary name, then a move (rename on a directory
        store; on object storage the final PUT is atomic anyway)."""
        data = json.dumps(doc, indent=2, sort_keys=True).encode()
        tmp = f"{path}.tmp-{os.getpid()}-{time.monotonic_ns()}"
        self.fs.pipe_file(tmp, data)
        self.fs.mv(tmp, path)

    # -- queries
    def refresh(self) -> None:
        """Forget cached listings (object stores): the next query sees what was published since."""
        self.fs.invalidate_cache()

    def regions(self) -> list[str]:
        try:
            names = [PurePosixPath(p).name for p in self.fs.ls(self.root, detail=False)]
        except FileNotFoundError:
            return []
        return sorted(n for n in names if NAME_RE.match(n) and self.fs.exists(self._path(n, LATEST)))

    def latest(self, region: str) -> str | None:
        raw = self._read_json(self._path(check_name(region, "region"), LATEST))
        if raw is None:
            return None
        try:
            doc = json.loads(raw)
        except ValueError as exc:
            raise StoreError(f"{region}: {LATEST} is not JSON") from exc
        if not isinstance(doc, dict):
            raise StoreError(f"{region}: {LATEST} is not an object")
        return check_name(doc.get("version"), "version")  # type: ignore[arg-type]

    def published(self, region: str, version: str) -> list[FileEntry] | None:
        raw = self._read_json(self._version_path(region, version, PUBLISHED))
        return None if raw is None else parse_published(raw, region, version)

    def versions(self, region: str) -> list[str]:
        """Completely uploaded versions of a region, oldest first."""
        try:
            names = [PurePosixPath(p).name for p in self.fs.ls(self._path(region, "versions"), detail=False)]
        except FileNotFoundError:
            return []
        return sorted(n for n in names if NAME_RE.match(n) and self.fs.exists(self._version_path(region, n, PUBLISHED)))

    # -- publish
    def publish(self, version_dir: Path, *, promote: bool = True) -> PublishResult:
        """Upload a version directory (unless already complete in the store), then point
        ``latest.json`` at it (``promote``)."""
        version_dir = Path(version_dir).resolve()
        manifest_path = version_dir / layout.MANIFEST
        if not manifest_path.is_file():
            raise StoreError(f"no {layout.MANIFEST} in {version_dir}: not a Meridian dataset")
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        region = check_name(manifest.get("region"), "region")
        version = check_name(manifest.get("version"), "version")
        format_version = manifest.get("format_version")
        if format_version not in layout.READ_FORMAT_VERSIONS:
            raise StoreError(f"{version_dir} has format version {format_version}, not publishable")
        entries = list_version_files(version_dir)
        uploaded = False
        if self.published(region, version) != entries:
            for entry in entries:
                target = self._version_path(region, version, entry.path)
                self.fs.makedirs(target.rsplit("/", 1)[0], exist_ok=True)
                self.fs.put_file(str(version_dir / entry.path), target)
            self._write_json(
                self._version_path(region, version, PUBLISHED),
                {
                    "store_format": STORE_FORMAT,
                    "region": region,
                    "version": version,
                    "format_version": format_version,
                    "published_at": _now(),
                    "files": [entry.__dict__ for entry in entries],
                },
            )
            uploaded = True
        if promote:
            self.promote(region, version)
        return PublishResult(region, version, len(entries), sum(e.bytes for e in entries), uploaded)

    def promote(self, region: str, version: str) -> None:
        """Make a completely uploaded version the one nodes serve (also a roll-back)."""
        check_name(region, "region")
        check_name(version, "version")
        if self.published(region, version) is None:
            raise StoreError(f"{region}/{version} is not completely published in {self.url}")
        self._write_json(self._path(region, LATEST), {"region": region, "version": version, "promoted_at": _now()})

    # -- pull
    def pull(self, region: str, data_dir: Path, version: str | None = None) -> PullResult:
        """Bring ``version`` (default: the store's latest) of ``region`` into ``data_dir`` and
        make it current. Verified and atomic; a no-op when it is current already."""
        started = time.perf_counter()
        check_name(region, "region")
        version = check_name(version, "version") if version else self.latest(region)
        if version is None:
            raise StoreError(f"nothing published for region {region!r} in {self.url}")
        data_dir = Path(data_dir)
        with region_lock(data_dir, region):
            versions = layout.versions_dir(data_dir, region)
            final = versions / version
            if local_version(data_dir, region) == version:
                return PullResult(region, version, 0, 0, False, time.perf_counter() - started)
            entries = self.published(region, version)
            if entries is None:
                raise StoreError(f"{region}/{version} is not completely published in {self.url}")
            if not (final / layout.MANIFEST).is_file():
                self._download(region, version, entries, versions)
            swap_current(layout.current_link(data_dir, region), final)
            prune_old_versions(versions, keep={final.name})
        return PullResult(
            region, version, len(entries), sum(e.bytes for e in entries), True, time.perf_counter() - started
        )

    def _download(self, region: str, version: str, entries: list[FileEntry], versions: Path) -> None:
        versions.mkdir(parents=True, exist_ok=True)
        staging = versions / f".pulling-{version}-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        try:
            pulled: dict[str, Path] = {}  # by SHA-256: files of equal content are fetched once, then linked
            for entry in entries:
                local = staging / entry.path
                local.parent.mkdir(parents=True, exist_ok=True)
                if entry.sha256 not in pulled or not hard_link(pulled[entry.sha256], local):
                    self._download_file(self._version_path(region, version, entry.path), local, entry)
                    pulled[entry.sha256] = local
            _check_manifest(staging, region, version)
            final = versions / version
            shutil.rmtree(final, ignore_errors=True)  # an incomplete leftover (no manifest)
            os.replace(staging, final)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def _download_file(self, remote: str, local: Path, entry: FileEntry) -> None:
        local.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        size = 0
        try:
            with self.fs.open(remote, "rb") as src, open(local, "wb") as dst:
                while chunk := src.read(CHUNK):
                    size += len(chunk)
                    if size > entry.bytes:
                        break  # longer than published: stop reading, report below
                    digest.update(chunk)
                    dst.write(chunk)
        except FileNotFoundError as exc:
            raise StoreError(f"{entry.path} is listed in {PUBLISHED} but missing from the store") from exc
        if size != entry.bytes or digest.hexdigest() != entry.sha256:
            raise StoreError(f"checksum mismatch for {entry.path}: the store's copy differs from {PUBLISHED}")


def _check_manifest(version_dir: Path, region: str, version: str) -> None:
    try:
        manifest = json.loads((version_dir / layout.MANIFEST).read_text(encoding="utf-8"))
    except ValueError as exc:
        raise StoreError(f"{region}/{version}: {layout.MANIFEST} is not JSON") from exc
    if manifest.get("region") != region or manifest.get("version") != version:
        raise StoreError(f"{region}/{version}: the dataset manifest names another region or version")
    found = manifest.get("format_version")
    if found not in layout.READ_FORMAT_VERSIONS:
        raise StoreError(
            f"{region}/{version} has format version {found}, this Meridian reads {layout.readable_formats()}: "
            "publish a version imported by this release"
        )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def open_store(url: str, options: dict[str, Any] | None = None) -> DatasetStore:
    return DatasetStore(url, **(options or {}))
