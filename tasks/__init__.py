"""Celery tasks: thin wrappers over ``engine.services`` (explicit names, JSON in and out)."""

from tasks import batch, geocoding, heavy, ops, signals, warmup, webhooks  # noqa: F401  (registers the tasks)
