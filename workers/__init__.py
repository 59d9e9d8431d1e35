"""The Celery application (broker and result backend on Redis), configured from ``config/``."""
