"""WSGI entry point for gunicorn: ``gunicorn -c config/gunicorn.py app.wsgi:app``."""

from app import create_app

app = create_app()
