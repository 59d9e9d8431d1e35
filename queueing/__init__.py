"""What the web processes and the Celery workers share through Redis, importable by both sides
without Flask or Celery: the queue protocol (``protocol.py``) and the metrics layout
(``metrics.py``)."""
