"""Celery tasks: thin wrappers over ``engine.services`` (explicit names, JSON in and out)."""

from tasks import geocoding, heavy, ops  # noqa: F401  (registers the tasks)
