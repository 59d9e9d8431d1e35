"""Geocoding many addresses in one task (the unit of work of batch geocoding jobs)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from engine.errors import MeridianError
from engine.services import geocoding
from tasks.base import datasets


@shared_task(name="meridian.geocode_many", acks_late=True)
def geocode_many(queries: list[str], limit: int = 1) -> list[dict[str, Any]]:
    """Geocode each query; one failing query yields an error entry, never a failed task."""
    registry = datasets()
    out: list[dict[str, Any]] = []
    for query in queries:
        try:
            result = geocoding.run(registry, geocoding.GeocodeParams(query=query, limit=limit))
            out.append({"query": query, "candidates": result["candidates"]})
        except MeridianError as exc:
            out.append({"query": query, "candidates": [], "error": exc.message})
    return out
