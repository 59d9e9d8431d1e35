"""The Celery application: the factory (``celery_app.py``) and the worker's entry point (``main.py``)."""
