"""Marshmallow schemas: query parameters -> engine params dataclasses, and response shapes."""
