"""The REST gateway under /v1: one flask-smorest Blueprint per function (``app/functions/``),
plus health. See ``app/gateway/base.py`` for the pattern every function follows."""
