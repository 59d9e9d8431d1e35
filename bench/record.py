"""What a benchmark's result file opens with: the command, when it ran, at which commit, on how
many cores and under what load (the machines are shared: the load says how far to trust it)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

from config.settings import PROJECT_ROOT


def run_record(module: str, argv: list[str] | None, load_start: float) -> dict[str, Any]:
    """``module`` is the benchmark's (``bench.matrix``); ``argv`` its arguments (None: sys.argv's);
    ``load_start`` the 1-minute load average when it started."""
    return {
        "command": f"python -m {module} " + " ".join(argv if argv is not None else sys.argv[1:]),
        "run_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True
        ).stdout.strip(),
        "cores": os.cpu_count(),
        "load_start": round(load_start, 2),
        "load_end": round(os.getloadavg()[0], 2),
    }
