"""Configuration from the environment; see :mod:`config.settings`."""

from config.settings import ConfigError, Limits, Settings

__all__ = ["ConfigError", "Limits", "Settings"]
