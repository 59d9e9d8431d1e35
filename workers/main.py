"""The worker's entry point: ``celery -A workers.main worker|flower|inspect ...``.

Like ``app/wsgi.py`` for the web, this module builds its app from the environment when it is
imported, which only a worker or monitor process does (a bad setting stops it at start with a
message naming the variable).
"""

from __future__ import annotations

from config.settings import Settings
from workers.celery_app import make_celery

app = make_celery(Settings.from_env())
