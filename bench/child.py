"""A benchmark's measurement in a child process of its own (so that its peak RSS and its imports
are the measurement's alone), answering one JSON object on the last line of its output."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from config.settings import PROJECT_ROOT


def json_child(module: str, args: list[str], timeout: float | None = None, *, nice: bool = False) -> dict[str, Any]:
    """Run ``python -m module *args`` (``nice`` lowers its priority) and return the JSON object it
    printed last; RuntimeError with the end of its stderr when it fails."""
    command = [sys.executable, "-m", module, *args]
    proc = subprocess.run(
        ["nice", *command] if nice else command,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result
