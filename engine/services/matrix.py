"""Travel-time matrices (``cmd=matrix``, ``/v1/matrix``): durations and distances from every
source to every destination, by many-to-many CH searches (:mod:`engine.routing.matrix`), by car,
on foot or by bicycle (``profile``, as routing takes it: :mod:`engine.routing.profiles`).

Result::

    {"durations": [[s | null, ...], ...], "distances": [[m | null, ...], ...],
     "sources": [{"location": {"lat", "lng"}, "snap_distance": m}, ...],
     "destinations": [...]}

Rows are sources, columns destinations; ``null`` where no route exists; only the requested
``annotations`` appear. Every cell is what ``/v1/routing`` answers for the pair with the same
``profile``: the profile's graph, the same region choice and snapping
(:func:`engine.services.routing.snap_points`), the same least-weight path, its duration and
distance rounded to 0.1 like the route's. A point on a fragment of the
network (a road cut off where the extract ends) is moved to the well-connected network for the
cells with no route from or to it, as the router does for a pair
(:func:`engine.services.routing.escape_fragments`); its ``location`` stays where it snapped.

Large matrices (jobs) are computed a block of rows at a time by :func:`run_rows`, the caller
storing each block as it comes; :func:`run` is the whole answer at once, :func:`run_arrays` the
same with its rows as float64 arrays (NaN for ``null``), which ``engine.codec.json_bytes`` writes
byte for byte as :func:`run`'s lists: the web and the worker serialise it.

Errors: more than ``Limits.matrix_locations`` sources or destinations, or more than
``Limits.matrix_cells`` cells (a job: ``matrix_job_locations``, ``matrix_job_cells``) ->
InvalidParameter naming ``sources`` / ``destinations``; an unknown profile, or one the region
was not imported with -> InvalidParameter naming ``profile``; a point
farther than the snap limit from any way of the profile -> InvalidParameter naming its list;
points in no common region -> NotFound. Destinations default to the sources.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.dataset import DatasetRegistry
from engine.errors import InvalidParameter
from engine.geo import round_coord
from engine.limits import DEFAULT_LIMITS, Limits
from engine.routing.matrix import MatrixQuery, matrix_query
from engine.routing.profiles import DEFAULT as DEFAULT_PROFILE
from engine.routing.profiles import canonical
from engine.routing.router import Router
from engine.routing.snap import Snap
from engine.services.routing import escape_fragments, snap_points

LatLng = tuple[float, float]

ANNOTATIONS = ("duration", "distance")


_ASYNC_HINT = {False: " in one request (more as a job: async=true)", True: " in one job"}


@dataclass(frozen=True)
class MatrixParams:
    sources: tuple[LatLng, ...]
    destinations: tuple[LatLng, ...] = ()  # empty: the sources
    annotations: tuple[str, ...] = ANNOTATIONS
    profile: str = DEFAULT_PROFILE  # a profile name or its alias

    @property
    def targets(self) -> tuple[LatLng, ...]:
        return self.destinations or self.sources

    @property
    def cells(self) -> int:
        return len(self.sources) * len(self.targets)


def check(params: MatrixParams, limits: Limits, *, job: bool = False) -> None:
    """The limits and allowed values (400 naming the parameter): those of a matrix answered in the
    request, or with ``job`` those of a matrix job (:func:`run_rows`)."""
    most_locations = limits.matrix_job_locations if job else limits.matrix_locations
    most_cells = limits.matrix_job_cells if job else limits.matrix_cells
    canonical(params.profile)
    bad = set(params.annotations) - set(ANNOTATIONS)
    if bad or not params.annotations:
        raise InvalidParameter(f"annotations accepts {', '.join(ANNOTATIONS)}", parameter="annotations")
    for name, points in (("sources", params.sources), ("destinations", params.targets)):
        if not points:
            raise InvalidParameter(f"{name} must list at least one point", parameter=name)
        if len(points) > most_locations:
            raise InvalidParameter(f"at most {most_locations} {name} are allowed{_ASYNC_HINT[job]}", parameter=name)
    if params.cells > most_cells:
        raise InvalidParameter(
            f"at most {most_cells} cells (sources x destinations) are allowed{_ASYNC_HINT[job]}; got {params.cells}",
            parameter="destinations",
        )


def run(datasets: DatasetRegistry, params: MatrixParams, limits: Limits | None = None) -> dict[str, Any]:
    """The whole answer at once, its rows as lists of floats (``None`` where no route)."""
    out = run_arrays(datasets, params, limits)
    for name in ROW_KEYS:
        if name in out:
            out[name] = _lists(out[name])
    return out


def run_arrays(datasets: DatasetRegistry, params: MatrixParams, limits: Limits | None = None) -> dict[str, Any]:
    """The answer of :func:`run` with each annotation's rows as one float64 array, NaN where no
    route: ``engine.codec.json_bytes`` writes it as :func:`run`'s document, byte for byte (NaN as
    ``null``), without a Python float per cell (what the queue's worker and the web serialise)."""
    header, blocks = run_rows(datasets, params, max(1, len(params.sources)), limits, job=False)
    out: dict[str, Any] = {}
    for _start, rows in blocks:
        out.update(rows)
    out.update(header)
    return out


ROW_KEYS = ("durations", "distances")
RowBlocks = Iterator[tuple[int, dict[str, np.ndarray]]]


def run_rows(
    datasets: DatasetRegistry, params: MatrixParams, rows: int, limits: Limits | None = None, *, job: bool = True
) -> tuple[dict[str, Any], RowBlocks]:
    """The matrix in blocks of ``rows`` sources, for a job: ``(waypoints, blocks)``, waypoints
    ``{"sources": [...], "destinations": [...]}`` and blocks ``(first row, {"durations": rows,
    "distances": rows})`` in order, each a float64 array rounded to 0.1, NaN where no route
    (:func:`run_arrays`), computed as they are taken (one block's cells in memory at a time).
    Points are snapped, and the limits checked (a job's with ``job``), before it returns."""
    limits = limits or DEFAULT_LIMITS
    check(params, limits, job=job)
    n = len(params.sources)
    # destinations that default to the sources are the same points: snapped once
    points = [*params.sources, *params.destinations]
    names = ["sources"] * n + ["destinations"] * (len(points) - n)
    router, snaps = snap_points(datasets, points, names, limits, canonical(params.profile))
    sources, targets = snaps[:n], (snaps[n:] if params.destinations else snaps)
    header = {"sources": [_waypoint(s) for s in sources], "destinations": [_waypoint(s) for s in targets]}
    query = matrix_query(router)
    # points on a fragment, moved to the well-connected network for their cells without a route
    # (as the router does for a pair); the moved destinations are extra columns of the same pass
    moved_dst = _moved(router, params.targets, targets, limits)
    moved_src = moved_dst if not params.destinations else _moved(router, params.sources, sources, limits)
    columns = [*targets, *moved_dst.values()]
    extra = {j: len(targets) + k for k, j in enumerate(moved_dst)}  # destination -> its moved column

    def blocks() -> RowBlocks:
        for start, cells in query.row_blocks(sources, columns, rows):
            block = range(start, start + cells[0].shape[0])
            main = _escaped_cells(query, cells, block, len(targets), moved_src, extra, columns)
            none = main[0] == np.inf
            out: dict[str, np.ndarray] = {}
            if "duration" in params.annotations:
                out["durations"] = _rounded(main[1], none)
            if "distance" in params.annotations:
                out["distances"] = _rounded(main[2], none)
            yield start, out

    return header, blocks()


def _moved(router: Router, points: tuple[LatLng, ...], snaps: list[Snap], limits: Limits) -> dict[int, Snap]:
    """The points on a fragment that move to the well-connected network, by index."""
    moved = escape_fragments(router, list(points), snaps, limits)
    if moved is None:
        return {}
    return {i: m for i, (m, s) in enumerate(zip(moved, snaps, strict=True)) if m is not s}


def _escaped_cells(
    query: MatrixQuery,
    cells: tuple[np.ndarray, np.ndarray, np.ndarray],
    block: range,
    n: int,
    moved_src: dict[int, Snap],
    extra: dict[int, int],
    columns: list[Snap],
) -> tuple[np.ndarray, ...]:
    """The block's cells to the ``n`` destinations, those without a route from or to a point on
    a fragment taken from the points moved to the well-connected network, as the router answers
    for that pair: from a moved source, its moved point's row (computed here, a few points of the
    thousand) to each destination or its moved column; from any other source, the moved
    destination's column of the same pass (``extra``). A cell depends on its own source and
    destination only, so nothing else is computed again."""
    main = tuple(c[:, :n] for c in cells)
    none = main[0] == np.inf
    if not none.any() or not (extra or moved_src):
        return main
    rows = np.flatnonzero(none.any(axis=1))
    cols = np.flatnonzero(none.any(axis=0))
    from_moved = np.array([block[i] in moved_src for i in rows], dtype=bool)
    if from_moved.any():  # the moved sources' rows, to each column or its moved column
        again = query.costs([moved_src[block[i]] for i in rows[from_moved]], columns)
        at = np.array([extra.get(int(j), int(j)) for j in cols])
        _fill(main, none, tuple(a[:, at] for a in again), rows[from_moved], cols)
    to_moved = [int(j) for j in cols if int(j) in extra]
    others = rows[~from_moved]
    if to_moved and others.size:  # the other sources to the moved destinations' columns
        at_moved = np.ix_(others, [extra[j] for j in to_moved])
        _fill(main, none, tuple(c[at_moved] for c in cells), others, np.array(to_moved))
    return main


def _fill(
    cells: tuple[np.ndarray, ...], none: np.ndarray, again: tuple[np.ndarray, ...], rows: np.ndarray, cols: np.ndarray
) -> None:
    """The cells of ``rows`` x ``cols`` without a route (``none``) from ``again``."""
    at = np.ix_(rows, cols)
    take = none[at]
    for whole, part in zip(cells, again, strict=True):
        sub = whole[at]
        sub[take] = part[take]
        whole[at] = sub


def _rounded(values: np.ndarray, none: np.ndarray) -> np.ndarray:
    """The cells rounded to 0.1 (as a route's duration and distance), NaN where ``none``."""
    rounded = np.ascontiguousarray(np.round(values, 1))  # json_bytes writes C-ordered arrays only
    rounded[none] = np.nan
    return rounded


def _lists(values: np.ndarray) -> list[list[float | None]]:
    """Rows of :func:`_rounded` cells as lists, None where NaN; the None are set by numpy in an
    object array (a row with one unreachable destination is not rebuilt in Python)."""
    none = np.isnan(values)
    if not none.any():
        rows: list[list[float | None]] = values.tolist()
        return rows
    cells = values.astype(object)
    cells[none] = None
    rows = cells.tolist()
    return rows


def _waypoint(s: Snap) -> dict[str, Any]:
    return {"location": {"lat": round_coord(s.lat), "lng": round_coord(s.lng)}, "snap_distance": round(s.distance_m, 1)}
