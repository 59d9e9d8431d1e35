"""numba's cache directory for a process started from the image (``meridian`` CLI, before it
runs gunicorn or Celery): the image's cache (``NUMBA_CACHE_DIR``, filled by ``meridian warmup``
at build) is used in place when it is writable; on a read-only root filesystem (the Kubernetes
manifests) it is copied to a writable temporary directory first. numba has no read-only cache: it
refuses a directory it cannot write to, and a kernel then cannot be cached at all.

No numba import here: numba reads ``NUMBA_CACHE_DIR`` when it is imported.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


def usable_cache_dir(configured: str | None) -> str | None:
    """The directory numba should use: ``configured`` if writable, else a writable copy of it."""
    if not configured:
        return None
    image = Path(configured)
    if _writable(image):
        return configured
    copy = Path(tempfile.gettempdir()) / "numba-cache"
    if image.is_dir() and not copy.exists():
        shutil.copytree(image, copy)
    return str(copy) if _writable(copy) else configured


def prepare_environment() -> None:
    """Point ``NUMBA_CACHE_DIR`` of this process (and of what it runs) at a usable directory."""
    chosen = usable_cache_dir(os.environ.get("NUMBA_CACHE_DIR"))
    if chosen:
        os.environ["NUMBA_CACHE_DIR"] = chosen
