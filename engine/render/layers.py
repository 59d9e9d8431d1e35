"""Read side of ``layers.sqlite`` (written by :mod:`engine.ingest.layers`): window queries.

``LayerStore.open(version_dir)`` is the dataset component ``"layers"``. It is read-only and safe
to share between threads (one SQLite connection per thread, opened ``mode=ro``).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import shapely

from engine import layout
from engine.errors import DatasetError
from engine.render.mercator import to_mercator


@dataclass
class Features:
    """Features in a window, as parallel arrays (geometries in Mercator metres)."""

    layer: np.ndarray  # str
    cls: np.ndarray  # str
    name: np.ndarray  # str or None
    flags: np.ndarray  # int
    geom: np.ndarray  # shapely geometries

    def __len__(self) -> int:
        return len(self.geom)

    def select(self, mask: np.ndarray) -> Features:
        return Features(self.layer[mask], self.cls[mask], self.name[mask], self.flags[mask], self.geom[mask])

    @classmethod
    def empty(cls) -> Features:
        e = np.array([], dtype=object)
        return cls(e, e, e, np.array([], dtype=np.int64), e)


class LayerStore:
    def __init__(self, path: Path) -> None:
        if not path.exists():
            raise DatasetError(f"{path} is missing: re-import the region with the layers stage")
        self.path = path
        self._uri = f"file:{path}?mode=ro"
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        con = self._con()
        meta = {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM meta")}
        self.bbox: tuple[float, float, float, float] | None = tuple(meta["bbox"]) if meta.get("bbox") else None
        self.has_sea: bool = bool(meta.get("has_sea"))
        self.counts: dict[str, int] = meta.get("counts", {})
        if self.bbox is not None:
            (x0, x1), (y0, y1) = to_mercator([self.bbox[0], self.bbox[2]], [self.bbox[1], self.bbox[3]])
            self.coverage: tuple[float, float, float, float] | None = (float(x0), float(y0), float(x1), float(y1))
        else:
            self.coverage = None

    @classmethod
    def open(cls, version_dir: Path) -> LayerStore:
        return cls(Path(version_dir) / layout.LAYERS_DB)

    def _con(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self._uri, uri=True, check_same_thread=False)
            self._local.con = con
            with self._all_lock:
                self._all.append(con)
        return con

    def intersects(self, bounds: tuple[float, float, float, float]) -> bool:
        """Does the Mercator window overlap this store's coverage?"""
        if self.coverage is None:
            return True
        minx, miny, maxx, maxy = bounds
        cx0, cy0, cx1, cy1 = self.coverage
        return not (maxx < cx0 or minx > cx1 or maxy < cy0 or miny > cy1)

    def query(self, bounds: tuple[float, float, float, float], zoom: int, named: bool = False) -> Features:
        """Features whose bbox meets the Mercator window and that are drawn at ``zoom``; with
        ``named``, only those with a name (what labels are made of)."""
        minx, miny, maxx, maxy = bounds
        rows = (
            self._con()
            .execute(
                "SELECT f.layer, f.class, f.name, f.flags, f.geom FROM features_rtree r "
                "JOIN features f ON f.id = r.id "
                "WHERE r.minx <= ? AND r.maxx >= ? AND r.miny <= ? AND r.maxy >= ? AND f.minzoom <= ?"
                + (" AND f.name IS NOT NULL" if named else ""),
                (maxx, minx, maxy, miny, zoom),
            )
            .fetchall()
        )
        if not rows:
            return Features.empty()
        layer, cls, name, flags, geom = zip(*rows, strict=False)
        return Features(
            np.array(layer, dtype=object),
            np.array(cls, dtype=object),
            np.array(name, dtype=object),
            np.array(flags, dtype=np.int64),
            shapely.from_wkb(np.array(geom, dtype=object)),
        )

    def close(self) -> None:
        with self._all_lock:
            for con in self._all:
                with contextlib.suppress(sqlite3.Error):
                    con.close()
            self._all.clear()
        self._local = threading.local()
