"""The limits of every size a client controls (400 beyond them), owned by the engine.

The engine's services and fence validation take a :class:`Limits` (default :data:`DEFAULT_LIMITS`);
``config/settings.py`` builds the deployment's instance (``Settings.limits``) and the web layer's
schemas declare the same maxima, so a request is refused before it reaches the engine.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Every size a client controls has a maximum here (400 beyond it)."""

    geocode_limit: int = 50
    suggest_limit: int = 20
    poi_limit: int = 100
    search_radius_m: float = 50_000.0
    query_length: int = 500
    routing_waypoints: int = 25
    routing_alternatives: int = 3
    snap_max_distance_m: float = 1_000.0  # a point farther than this from any road -> 400
    snaptoroad_points: int = 1000
    snaptoroad_max_radius_m: float = 200.0  # GPS accuracy (sigma) a client may declare
    isochrone_contours: int = 4
    isochrone_max_minutes: float = 60.0
    isochrone_max_distance_m: float = 50_000.0
    staticmap_max_size: int = 1280
    staticmap_markers: int = 100
    staticmap_path_points: int = 1000
    matrix_locations: int = 1000  # sources, and destinations, of one matrix answered in the request
    matrix_cells: int = 1_000_000  # sources x destinations of one matrix answered in the request
    matrix_job_locations: int = 10_000  # sources, and destinations, of one matrix job (async)
    matrix_job_cells: int = 100_000_000  # cells of one matrix job
    matrix_job_chunk_cells: int = 1_000_000  # a job's result is stored in chunks of whole rows of about this many cells
    matrix_inline_cells: int = 10_000  # up to this many cells, computed in the web process
    geometry_simplify_max_m: float = 10_000.0
    batch_geocode_max: int = 1000
    optimization_jobs: int = 1000  # jobs of one route optimisation problem
    optimization_vehicles: int = 100
    optimization_inline_locations: int = 12  # up to this many distinct locations, solved in the web process
    geofence_max_vertices: int = 10_000
    geofence_max_per_account: int = 10_000
    geofence_max_radius_m: float = 100_000.0
    geofence_batch_points: int = 1000
    geofence_metadata_bytes: int = 4096  # fence metadata, serialized as compact JSON
    geofence_name_chars: int = 200
    request_line_bytes: int = 32_768
    request_body_bytes: int = 4 * 1024 * 1024


DEFAULT_LIMITS = Limits()  # frozen: one shared instance for the engine's defaults
