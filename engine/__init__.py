"""Meridian's engine: import, datasets, indexes and algorithms.

Importable and testable without Flask or Celery. The web faces (``app``) and the workers
(``tasks``) are thin layers over the service functions in :mod:`engine.services`.
"""
