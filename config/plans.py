"""Service names and the plans seeded into SQL on first start (editable with `meridian plans set`).

A plan's ``services`` is a list of service names, or ``["*"]`` for all of them. Quotas are
requests per minute (sliding window), per day and per month (calendar windows in UTC), counted
for the account (all its keys together); 0 means no limit for that window. ``max_keys`` caps an
account's live keys and ``max_fence_vertices`` the vertices of all its geofences (0: no cap);
``max_matrix_cells`` the cells (sources x destinations) of one matrix request (0: the
deployment's limit, ``Limits.matrix_job_cells``).
"""

from __future__ import annotations

SERVICES: tuple[str, ...] = (
    "geocoding",
    "reverse_geocoding",
    "suggest",
    "routing",
    "isochrone",
    "poi",
    "proximity",
    "staticmap",
    "geometry",
    "matrix",
    "optimization",
    "snaptoroad",
    "geofencing",
)

DEFAULT_PLANS: tuple[dict, ...] = (
    {
        "name": "free",
        "per_minute": 60,
        "per_day": 2_500,
        "per_month": 50_000,
        "services": [
            "geocoding",
            "reverse_geocoding",
            "suggest",
            "routing",
            "poi",
            "proximity",
            "snaptoroad",
            "geofencing",
        ],
        "max_keys": 5,
        "max_fence_vertices": 20_000,
        "max_matrix_cells": 10_000,  # 100 x 100
        "description": "Search and routing; no static maps, isochrones or geometry downloads.",
    },
    {
        "name": "standard",
        "per_minute": 600,
        "per_day": 100_000,
        "per_month": 2_000_000,
        "services": ["*"],
        "max_keys": 25,
        "max_fence_vertices": 500_000,
        "max_matrix_cells": 1_000_000,  # 1,000 x 1,000
        "description": "Every service.",
    },
    {
        "name": "pro",
        "per_minute": 6_000,
        "per_day": 2_000_000,
        "per_month": 0,
        "services": ["*"],
        "max_keys": 100,
        "max_fence_vertices": 2_000_000,
        "max_matrix_cells": 100_000_000,  # 10,000 x 10,000 (a job)
        "description": "Every service, high quotas, no monthly cap.",
    },
)
