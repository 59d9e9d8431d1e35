"""PBF -> dataset: a sequence of named stages over a fresh version directory, then an atomic swap.

Each stage declares what it writes; the manifest records every stage's counts and timing. A
failure anywhere (missing file, not a PBF, truncated file, empty extract, a stage's exception)
removes the unfinished version and leaves the previous one serving.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from common.processes import process_alive
from engine import layout
from engine.errors import DatasetError, InvalidParameter
from engine.heap_memory import release_free_memory, unmap_large_blocks
from engine.identical_files import link_identical, sha256_of
from engine.ingest.child_process import call_in_child
from engine.ingest.context import ImportContext
from engine.progress import ImportProgress, anon_mb, rss_mb, stage_peaks
from engine.routing.profiles import NAMES as PROFILE_NAMES
from engine.routing.profiles import parse_list

log = logging.getLogger("meridian.ingest")


@dataclass(frozen=True)
class Stage:
    name: str
    target: str  # "module:function", the function takes an ImportContext and returns counts
    writes: tuple[str, ...]
    # run in a child process (engine.ingest.child_process): what the stage allocates leaves with it
    # instead of weighing on the later stages' peak; such a stage may read ``ctx.shared`` (pickled
    # to the child), not add to it
    isolated: bool = False

    def load(self) -> Callable[[ImportContext], dict[str, int]]:
        module, func = self.target.split(":")
        return getattr(importlib.import_module(module), func)


# Order matters: later stages may read what earlier ones put in ``ctx.shared``.
STAGES: tuple[Stage, ...] = (
    Stage("admin", "engine.ingest.admin:run", (layout.ADMIN_DB,)),
    Stage("search", "engine.ingest.search:run", (layout.SEARCH_DB,), isolated=True),
    Stage("roads", "engine.ingest.roads:run", tuple(layout.profile_graph_dir(p) for p in PROFILE_NAMES)),
    Stage("layers", "engine.ingest.layers:run", (layout.LAYERS_DB,)),
)

PBF_MAGIC = b"OSMHeader"


@dataclass(frozen=True)
class ImportResult:
    region: str
    version: str
    path: Path
    manifest: dict
    skipped: bool  # True when the same source was already imported with this format


def check_source(pbf_path: Path) -> None:
    if not pbf_path.exists():
        raise DatasetError(f"input file not found: {pbf_path}")
    if not pbf_path.is_file():
        raise DatasetError(f"input is not a file: {pbf_path}")
    with open(pbf_path, "rb") as fh:
        head = fh.read(64)
    if not head:
        raise DatasetError(f"input file is empty: {pbf_path}")
    if PBF_MAGIC not in head:
        raise DatasetError(f"not an OSM PBF file (no OSMHeader block): {pbf_path}")


def region_name_for(pbf_path: Path) -> str:
    name = pbf_path.name
    for suffix in (".osm.pbf", ".pbf"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return name.lower().replace(" ", "-")


ENGINE_ROOT = Path(__file__).resolve().parent.parent


def code_fingerprint() -> str:
    """A hash of the engine's source: a dataset built by other code is rebuilt on re-import,
    even when the source file and the format version did not change."""
    digest = hashlib.sha256()
    for path in sorted(ENGINE_ROOT.rglob("*.py")):
        if "services" in path.parts:
            continue  # query-time code does not shape the dataset
        digest.update(str(path.relative_to(ENGINE_ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def read_manifest(version_dir: Path) -> dict:
    with open(version_dir / layout.MANIFEST, encoding="utf-8") as fh:
        return json.load(fh)


def _check_region_name(region: str) -> None:
    if not region.replace("-", "").replace("_", "").isalnum():
        raise DatasetError(f"region name must be letters, digits, '-' or '_': {region!r}")


def _up_to_date(
    current: Path, source_hash: str, fingerprint: str, stages: tuple[Stage, ...], profiles: tuple[str, ...]
) -> dict | None:
    """The current version's manifest when it was built from the same source by the same code,
    format, stages and profiles (re-importing it would change nothing), else None."""
    if not current.exists():
        return None
    previous = read_manifest(current.resolve())
    same = (
        previous.get("source", {}).get("sha256") == source_hash
        and previous.get("format_version") == layout.FORMAT_VERSION
        and previous.get("stages_run") == [s.name for s in stages]
        and previous.get("code") == fingerprint
        and previous.get("profiles", ["car"]) == list(profiles)
    )
    return previous if same else None


@dataclass
class StageRun:
    """What the stages reported: per stage its timing, outputs and counts; all counts merged."""

    reports: dict[str, dict] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


def _run_stages(stages: tuple[Stage, ...], ctx: ImportContext) -> StageRun:
    """Run the stages in order; each one's report has its seconds and its peak memory (the
    process's peak resident set while it ran, :mod:`engine.progress`)."""
    run = StageRun()
    unmap_large_blocks()  # the stages' large arrays go back to the system when freed
    for number, stage in enumerate(stages, 1):
        t0 = time.perf_counter()
        log.info("region %s: stage %s", ctx.region, stage.name)
        ctx.progress.stage_started(stage.name, number, len(stages))
        release_free_memory()  # what the earlier stages freed does not weigh on this one
        try:
            stage_counts, peak, peak_anon = _run_stage(stage, ctx)
        except DatasetError:
            raise
        except Exception as exc:  # a stage's failure, e.g. osmium on a truncated file
            raise DatasetError(f"stage {stage.name} failed on {ctx.pbf_path.name}: {exc}") from exc
        seconds = time.perf_counter() - t0
        ctx.progress.stage_finished(stage.name, seconds, peak, peak_anon)
        run.reports[stage.name] = {
            "seconds": round(seconds, 3),
            "peak_rss_mb": round(peak, 1),
            "peak_anon_mb": round(peak_anon, 1),
            "writes": [w for w in stage.writes if (ctx.out_dir / w).exists()],
            "counts": stage_counts,
        }
        run.counts.update(stage_counts)
    if not any(run.counts.values()):
        raise DatasetError(f"empty extract: nothing to serve in {ctx.pbf_path.name}")
    return run


Measured = tuple[dict[str, int], float, float]  # counts, peak resident set and peak anonymous MB


def _run_stage(stage: Stage, ctx: ImportContext) -> Measured:
    """The stage's counts and the peak memory while it ran: this process's, or for an isolated
    stage its child's plus what this process holds meanwhile (both are alive)."""
    if not stage.isolated:
        return _measured(stage, ctx)
    holding, holding_anon = rss_mb(), anon_mb()
    quiet = replace(ctx, progress=ImportProgress.silent())  # a stream does not travel to a child
    if ctx.progress.stream is None:
        counts, peak, peak_anon = call_in_child(_measured, stage, quiet)
    else:
        counts, peak, peak_anon = call_in_child(
            _measured_in_child, stage, quiet, ctx.progress.live, output=ctx.progress.stream
        )
    return counts, holding + peak, holding_anon + peak_anon


def _measured_in_child(stage: Stage, ctx: ImportContext, live: bool, stream: TextIO) -> Measured:
    """In the child: its progress lines go to ``stream``, which forwards them to the parent's."""
    ctx.progress = ImportProgress.of_child(stream, live)
    return _measured(stage, ctx)


def _measured(stage: Stage, ctx: ImportContext) -> Measured:
    """The stage's counts, its peak resident set and its peak anonymous memory in MB while it
    ran (:mod:`engine.progress`): the process's with the child processes the stage starts."""
    with stage_peaks() as peaks:
        counts = stage.load()(ctx)
    return counts, peaks.rss, peaks.anon


def _manifest(
    ctx: ImportContext,
    version: str,
    source_hash: str,
    fingerprint: str,
    stages: tuple[Stage, ...],
    run: StageRun,
    started: float,
) -> dict:
    return {
        "format_version": layout.FORMAT_VERSION,
        "code": fingerprint,
        "region": ctx.region,
        "version": version,
        "source": {
            "path": str(ctx.pbf_path),
            "file": ctx.pbf_path.name,
            "sha256": source_hash,
            "bytes": ctx.pbf_path.stat().st_size,
        },
        "bbox": ctx.shared.get("bbox"),
        "counts": run.counts,
        "stages": run.reports,
        "stages_run": [s.name for s in stages],
        "profiles": list(ctx.profiles),
        "built_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "build_seconds": round(time.perf_counter() - started, 3),
        # the import's peak: each stage's window resets the process's peak (engine.progress), so
        # getrusage's ru_maxrss and /usr/bin/time see only the last stage's
        "peak_rss_mb": max((r["peak_rss_mb"] for r in run.reports.values()), default=None),
        # of which heap and arrays: the memory an import machine must have (mapped files' pages aside)
        "peak_anon_mb": max((r["peak_anon_mb"] for r in run.reports.values()), default=None),
        "attribution": "© OpenStreetMap contributors, ODbL 1.0",
    }


def import_pbf(
    pbf_path: Path,
    data_dir: Path,
    region: str | None = None,
    *,
    force: bool = False,
    stages: tuple[Stage, ...] = STAGES,
    profiles: tuple[str, ...] = PROFILE_NAMES,
    progress: ImportProgress | None = None,
) -> ImportResult:
    """Import a PBF as a new version of ``region`` and make it current; a no-op when the current
    version was built from the same file by the same code for the same travel ``profiles``
    (unless ``force``). ``progress`` shows the stages and their long steps (the CLI passes
    :meth:`ImportProgress.terminal`); by default nothing is shown."""
    pbf_path = Path(pbf_path).resolve()
    region = region or region_name_for(pbf_path)
    _check_region_name(region)
    check_source(pbf_path)
    source_hash = sha256_of(pbf_path)
    fingerprint = code_fingerprint()

    current = layout.current_link(data_dir, region)
    profiles = parse_profiles(profiles)
    previous = None if force else _up_to_date(current, source_hash, fingerprint, stages, profiles)
    if previous is not None:
        log.info("region %s is up to date (version %s)", region, previous["version"])
        return ImportResult(region, previous["version"], current.resolve(), previous, True)

    started = time.perf_counter()
    version = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + source_hash[:8]
    versions = layout.versions_dir(data_dir, region)
    versions.mkdir(parents=True, exist_ok=True)
    remove_abandoned_builds(versions)
    building = versions / f"{BUILDING}{version}-{os.getpid()}"
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir()
    ctx = ImportContext(
        pbf_path=pbf_path,
        region=region,
        out_dir=building,
        log=log,
        profiles=profiles,
        progress=progress or ImportProgress.silent(),
    )
    try:
        run = _run_stages(stages, ctx)
        linked = link_identical(building)
        log.info(
            "region %s: %d files linked to identical ones (%.1f MB saved)",
            region,
            linked.linked,
            linked.bytes_saved / 1e6,
        )
        manifest = _manifest(ctx, version, source_hash, fingerprint, stages, run, started)
        manifest["identical_files"] = linked.as_dict()
        with open(building / layout.MANIFEST, "w", encoding="utf-8") as fh:
            json.dump(manifest, fh, indent=2, ensure_ascii=False)
        final = versions / version
        os.replace(building, final)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise

    swap_current(current, final)
    prune_old_versions(versions, keep={final.name})
    log.info("region %s: version %s ready in %.1fs", region, version, manifest["build_seconds"])
    return ImportResult(region, version, final, manifest, False)


def parse_profiles(names: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The travel profiles to build, checked (DatasetError naming the known ones)."""
    try:
        return parse_list(names)
    except InvalidParameter as exc:
        raise DatasetError(str(exc)) from exc


def swap_current(current: Path, target: Path) -> None:
    """Point ``current`` at ``target`` atomically (rename of a fresh symlink over the old one)."""
    tmp = current.with_name(f".current-{os.getpid()}")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(Path("versions") / target.name)
    os.replace(tmp, current)


BUILDING = ".building-"  # a version being built: .building-<version>-<pid of the import>


def remove_abandoned_builds(versions: Path) -> list[Path]:
    """Remove the versions being built by an import that no longer runs (killed: SIGKILL, the
    out-of-memory killer, a machine that stopped), which nothing else removes; an import still
    running (its pid alive) keeps its own; a data directory is one machine's (publish and pull carry
    versions between nodes). The ones removed."""
    removed = []
    for path in versions.glob(f"{BUILDING}*"):
        pid = path.name.rpartition("-")[2]
        if pid.isdigit() and not process_alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def prune_old_versions(versions: Path, keep: set[str], retain: int = 2) -> None:
    """Keep the newest ``retain`` versions (a process may still have the previous one open)."""
    done = sorted(
        (p for p in versions.iterdir() if p.is_dir() and not p.name.startswith(".")),
        key=lambda p: p.name,
        reverse=True,
    )
    for old in done[retain:]:
        if old.name not in keep:
            shutil.rmtree(old, ignore_errors=True)
