"""scripts/dataset_fingerprint.py run as its users run it: the lines it prints for a region's
current version (tests that compare two imports, and the script's own tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "dataset_fingerprint.py"


def fingerprint(data_dir: Path, region: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, str(SCRIPT), str(data_dir), region], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.splitlines()
