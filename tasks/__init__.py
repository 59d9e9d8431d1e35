"""Celery tasks: thin wrappers over ``engine.services`` (explicit names, JSON in and out).

Importing this package imports no task: the worker's Celery app imports the modules listed in
``workers/celery_app.py`` (``TASK_MODULES``). The web sends tasks by name, through
``queueing/protocol.py`` (heavy functions, jobs) or the ``enqueue`` function defined next to a task
(``tasks/webhooks.py``).
"""
