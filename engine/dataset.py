"""Loaded datasets: one per region, each opening its components (search index, router, ...) lazily.

A process (web worker or Celery worker) holds one :class:`DatasetRegistry`. Components are opened
once per process and shared by all requests; their files are read-only (SQLite opened
``mode=ro``, numpy arrays memory-mapped), so every gunicorn worker shares the page cache.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import layout
from engine.errors import DatasetError, InvalidParameter

if TYPE_CHECKING:  # the components are imported when first opened (numba, SQLite), not here
    from engine.admin import AdminIndex
    from engine.routing.router import Router
    from engine.search.index import SearchIndex

log = logging.getLogger("meridian.dataset")

# component name -> "module:callable" taking the version directory and returning the component
COMPONENTS: dict[str, str] = {
    "admin": "engine.admin:AdminIndex.open",
    "search": "engine.search.index:SearchIndex.open",
    "router": "engine.routing.router:Router.open",
    "layers": "engine.render.layers:LayerStore.open",
    "roadnet": "engine.matching.network:MatchingComponent.open",  # matching + isochrones
}
# components with one instance per travel profile: their opener takes (version_dir, profile)
PROFILE_COMPONENTS = frozenset({"router", "roadnet"})


def _resolve(target: str):
    module, attr = target.split(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


@dataclass(frozen=True)
class BBox:
    min_lng: float
    min_lat: float
    max_lng: float
    max_lat: float

    def contains(self, lat: float, lng: float, margin_deg: float = 0.0) -> bool:
        return (
            self.min_lat - margin_deg <= lat <= self.max_lat + margin_deg
            and self.min_lng - margin_deg <= lng <= self.max_lng + margin_deg
        )

    def as_list(self) -> list[float]:
        return [self.min_lng, self.min_lat, self.max_lng, self.max_lat]


class Dataset:
    def __init__(self, path: Path) -> None:
        self.path = path
        manifest_path = path / layout.MANIFEST
        if not manifest_path.exists():
            raise DatasetError(f"no manifest in {path}: not a Meridian dataset")
        with open(manifest_path, encoding="utf-8") as fh:
            self.manifest: dict = json.load(fh)
        found = self.manifest.get("format_version")
        if found not in layout.READ_FORMAT_VERSIONS:
            raise DatasetError(
                f"dataset {path} has format version {found}, this Meridian reads "
                f"{layout.readable_formats()}: re-import it with `meridian import`"
            )
        self.region: str = self.manifest["region"]
        self.version: str = self.manifest["version"]
        bbox = self.manifest.get("bbox") or [-180.0, -90.0, 180.0, 90.0]
        self.bbox = BBox(*bbox)
        # travel profiles with a routing graph (datasets of earlier releases: the car's only)
        self.profiles: tuple[str, ...] = tuple(self.manifest.get("profiles") or ("car",))
        self._components: dict[str, Any] = {}
        self._lock = threading.Lock()

    def component(self, name: str, profile: str = "car") -> Any:
        """A component, opened on first use; those of :data:`PROFILE_COMPONENTS` for one travel
        profile (the car's by default), each opened once per profile."""
        key = name if profile == "car" else f"{name}:{profile}"
        found = self._components.get(key)
        if found is not None:
            return found
        with self._lock:
            if key not in self._components:
                if name not in COMPONENTS:
                    raise DatasetError(f"unknown dataset component {name!r}")
                if profile != "car" and name not in PROFILE_COMPONENTS:
                    raise DatasetError(f"dataset component {name!r} has no travel profiles")
                opener = _resolve(COMPONENTS[name])
                self._components[key] = opener(self.path) if profile == "car" else opener(self.path, profile)
            return self._components[key]

    def router_for(self, profile: str) -> Router:
        """The router of a travel profile this dataset was imported with (InvalidParameter naming
        ``profile`` and the region's profiles otherwise)."""
        self.require_profile(profile)
        return self.component("router", profile)

    def require_profile(self, profile: str, parameter: str = "profile") -> None:
        """InvalidParameter naming ``parameter`` (where the request gave the profile) and the
        region's profiles, unless the region was imported with ``profile``."""
        if profile not in self.profiles:
            raise InvalidParameter(
                f"region {self.region} was imported without the {profile} profile; "
                f"its profiles: {', '.join(self.profiles)}",
                parameter=parameter,
            )

    @property
    def admin(self) -> AdminIndex:
        return self.component("admin")

    @property
    def search(self) -> SearchIndex:
        return self.component("search")

    @property
    def router(self) -> Router:
        return self.component("router")

    def close(self) -> None:
        for comp in self._components.values():
            close = getattr(comp, "close", None)
            if close:
                close()
        self._components.clear()

    def __repr__(self) -> str:
        return f"<Dataset {self.region} {self.version}>"


class DatasetRegistry:
    """All regions under ``DATA_DIR``; reloads a region when its ``current`` link moves.

    ``prepare`` (``engine.warmup.warm_dataset`` in a server) is run on each new version found by
    :meth:`reload` before it replaces the one served: the old version answers until the new one
    is open and warm. The first load, in the constructor, only reads the manifests (a server
    warms them in the background while it says it is not ready)."""

    def __init__(self, data_dir: Path, prepare: Callable[[Dataset], None] | None = None) -> None:
        self.data_dir = Path(data_dir)
        self._datasets: dict[str, Dataset] = {}
        self._versions = ""
        self._lock = threading.Lock()
        self._reload_lock = threading.Lock()
        self._prepare: Callable[[Dataset], None] | None = None
        self.reload()
        self._prepare = prepare

    @classmethod
    def holding(cls, datasets: list[Dataset]) -> DatasetRegistry:
        """A registry of exactly ``datasets`` (no DATA_DIR): for running a service on a version
        that is not served yet."""
        registry = cls(Path(os.devnull))
        registry._swap({d.region: d for d in datasets})
        return registry

    def reload(self) -> None:
        with self._reload_lock:  # one reload at a time: a new version is prepared once
            self._reload()

    def _reload(self) -> None:
        found: dict[str, Dataset] = {}
        root = layout.regions_dir(self.data_dir)
        if root.is_dir():
            for region_dir in sorted(root.iterdir()):
                current = region_dir / "current"
                if not current.exists():
                    continue
                target = current.resolve()
                existing = self._datasets.get(region_dir.name)
                if existing is not None and existing.path == target:
                    found[region_dir.name] = existing
                    continue
                try:
                    fresh = Dataset(target)
                except DatasetError as exc:
                    log.error("region %s not loaded: %s", region_dir.name, exc)
                    continue
                kept = self._opened(fresh, existing)
                if kept is not None:
                    found[region_dir.name] = kept
        self._swap(found)

    def _opened(self, new: Dataset, old: Dataset | None) -> Dataset | None:
        """``new`` once prepared; ``old`` (kept serving) when preparing it failed."""
        if self._prepare is None:
            return new
        started = time.perf_counter()
        try:
            self._prepare(new)
        except Exception as exc:
            new.close()
            log.error("region %s: version %s not served, it failed to open: %s", new.region, new.version, exc)
            return old
        log.info(
            "region %s: version %s open and warm in %.1f s, replacing %s",
            new.region,
            new.version,
            time.perf_counter() - started,
            old.version if old else "nothing",
        )
        return new

    def _swap(self, found: dict[str, Dataset]) -> None:
        with self._lock:
            for name, old in self._datasets.items():
                if found.get(name) is not old:
                    old.close()
            self._datasets = found
            self._versions = ",".join(sorted(f"{d.region}:{d.version}" for d in found.values()))

    def all(self) -> list[Dataset]:
        return list(self._datasets.values())

    def versions(self) -> str:
        """``region:version,...`` of every loaded dataset: part of every heavy cache key and ETag
        (worked out at each reload, not per request)."""
        return self._versions

    def regions(self) -> list[str]:
        return list(self._datasets)

    def get(self, region: str) -> Dataset | None:
        return self._datasets.get(region)

    def require(self, region: str) -> Dataset:
        """The dataset of ``region``, or a DatasetError naming the loaded ones."""
        found = self._datasets.get(region)
        if found is None:
            raise DatasetError(f"no dataset for region {region!r} (loaded: {', '.join(self._datasets) or 'none'})")
        return found

    def covering(self, lat: float, lng: float, margin_deg: float = 0.0) -> list[Dataset]:
        """Datasets whose bbox contains the point, smallest bbox first."""
        hits = [d for d in self._datasets.values() if d.bbox.contains(lat, lng, margin_deg)]
        return sorted(hits, key=lambda d: (d.bbox.max_lng - d.bbox.min_lng) * (d.bbox.max_lat - d.bbox.min_lat))

    def summary(self) -> list[dict]:
        return [
            {
                "region": d.region,
                "version": d.version,
                "bbox": d.bbox.as_list(),
                "profiles": list(d.profiles),
                "counts": d.manifest.get("counts", {}),
            }
            for d in self._datasets.values()
        ]
