"""Travel-time matrices (``cmd=matrix``, ``/v1/matrix``): durations and distances from every
source to every destination, by many-to-many CH searches (:mod:`engine.routing.matrix`).

Result::

    {"durations": [[s | null, ...], ...], "distances": [[m | null, ...], ...],
     "sources": [{"location": {"lat", "lng"}, "snap_distance": m}, ...],
     "destinations": [...]}

Rows are sources, columns destinations; ``null`` where no route exists; only the requested
``annotations`` appear. Every cell is what ``/v1/routing`` answers for the pair: the same
region choice and snapping (:func:`engine.services.routing.snap_points`), the same least-weight
path, its duration and distance rounded to 0.1 like the route's. A point on a fragment of the
network (a road cut off where the extract ends) is moved to the well-connected network for the
cells with no route from or to it, as the router does for a pair
(:func:`engine.services.routing.escape_fragments`); its ``location`` stays where it snapped.

Errors: more than ``Limits.matrix_locations`` sources or destinations, or more than
``Limits.matrix_cells`` cells -> InvalidParameter naming ``sources`` / ``destinations``; a point
farther than the snap limit from any road -> InvalidParameter naming its list; points in no
common region -> NotFound. Destinations default to the sources.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.dataset import DatasetRegistry
from engine.errors import InvalidParameter
from engine.geo import round_coord
from engine.limits import DEFAULT_LIMITS, Limits
from engine.routing.matrix import matrix_query
from engine.routing.router import Router
from engine.routing.snap import Snap
from engine.services.routing import escape_fragments, snap_points

LatLng = tuple[float, float]

ANNOTATIONS = ("duration", "distance")
PROFILES = ("car",)


@dataclass(frozen=True)
class MatrixParams:
    sources: tuple[LatLng, ...]
    destinations: tuple[LatLng, ...] = ()  # empty: the sources
    annotations: tuple[str, ...] = ANNOTATIONS
    profile: str = "car"

    @property
    def targets(self) -> tuple[LatLng, ...]:
        return self.destinations or self.sources

    @property
    def cells(self) -> int:
        return len(self.sources) * len(self.targets)


def check(params: MatrixParams, limits: Limits) -> None:
    """The limits and allowed values (400 naming the parameter)."""
    if params.profile not in PROFILES:
        raise InvalidParameter(f"profile must be one of {', '.join(PROFILES)}", parameter="profile")
    bad = set(params.annotations) - set(ANNOTATIONS)
    if bad or not params.annotations:
        raise InvalidParameter(f"annotations accepts {', '.join(ANNOTATIONS)}", parameter="annotations")
    for name, points in (("sources", params.sources), ("destinations", params.targets)):
        if not points:
            raise InvalidParameter(f"{name} must list at least one point", parameter=name)
        if len(points) > limits.matrix_locations:
            raise InvalidParameter(f"at most {limits.matrix_locations} {name} are allowed", parameter=name)
    if params.cells > limits.matrix_cells:
        raise InvalidParameter(
            f"at most {limits.matrix_cells} cells (sources x destinations) are allowed; got {params.cells}",
            parameter="destinations",
        )


def run(datasets: DatasetRegistry, params: MatrixParams, limits: Limits | None = None) -> dict[str, Any]:
    limits = limits or DEFAULT_LIMITS
    check(params, limits)
    n = len(params.sources)
    points = [*params.sources, *params.targets]
    names = ["sources"] * n + ["destinations"] * (len(points) - n)
    router, snaps = snap_points(datasets, points, names, limits)
    sources, targets = snaps[:n], snaps[n:]
    query = matrix_query(router)
    weight, duration, distance = query.costs(sources, targets)
    _escaped_cells(router, params, sources, targets, (weight, duration, distance), limits)
    out: dict[str, Any] = {}
    none = weight == np.inf
    if "duration" in params.annotations:
        out["durations"] = _rows(duration, none)
    if "distance" in params.annotations:
        out["distances"] = _rows(distance, none)
    out["sources"] = [_waypoint(s) for s in sources]
    out["destinations"] = [_waypoint(s) for s in targets]
    return out


def _escaped_cells(
    router: Router,
    params: MatrixParams,
    sources: list[Snap],
    targets: list[Snap],
    cells: tuple[np.ndarray, np.ndarray, np.ndarray],
    limits: Limits,
) -> None:
    """Cells with no route whose source or destination is on a fragment: the route between the
    points moved to the well-connected network, as the router answers for that pair."""
    weight = cells[0]
    none = weight == np.inf
    if not none.any():
        return
    rows = np.flatnonzero(none.any(axis=1))
    cols = np.flatnonzero(none.any(axis=0))
    src_moved = escape_fragments(router, [params.sources[i] for i in rows], [sources[i] for i in rows], limits)
    dst_moved = escape_fragments(router, [params.targets[j] for j in cols], [targets[j] for j in cols], limits)
    if src_moved is None and dst_moved is None:
        return
    src = src_moved or [sources[i] for i in rows]
    dst = dst_moved or [targets[j] for j in cols]
    again = matrix_query(router).costs(src, dst)
    moved = (
        np.array([a is not b for a, b in zip(src, (sources[i] for i in rows), strict=True)])[:, None]
        | np.array([a is not b for a, b in zip(dst, (targets[j] for j in cols), strict=True)])[None, :]
    )
    take = none[np.ix_(rows, cols)] & moved
    for whole, part in zip(cells, again, strict=True):
        block = whole[np.ix_(rows, cols)]
        block[take] = part[take]
        whole[np.ix_(rows, cols)] = block


def _rows(values: np.ndarray, none: np.ndarray) -> list[list[float | None]]:
    rounded = np.round(values, 1)
    rows: list[list[float | None]] = rounded.tolist()
    for i in np.flatnonzero(none.any(axis=1)).tolist():
        rows[i] = [None if missing else v for v, missing in zip(rows[i], none[i].tolist(), strict=True)]
    return rows


def _waypoint(s: Snap) -> dict[str, Any]:
    return {"location": {"lat": round_coord(s.lat), "lng": round_coord(s.lng)}, "snap_distance": round(s.distance_m, 1)}
