"""Configuration from the environment; see :mod:`config.settings`."""

from config.settings import ConfigError, Settings

__all__ = ["ConfigError", "Settings"]
