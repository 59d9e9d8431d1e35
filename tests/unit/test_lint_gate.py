"""`make lint` can fail: scripts/lint.sh over a scratch project holding the repository's own
pyproject.toml (same ruff and mypy configuration) and one module in a strictly typed package."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from config.settings import PROJECT_ROOT

CLEAN = '''"""A typed, formatted module."""


def double(value: int) -> int:
    return 2 * value
'''

PLANTED = {
    "type error": (CLEAN.replace("return 2 * value", 'return f"{value}"'), "[return-value]"),
    "missing annotation in a strict package": (CLEAN.replace("value: int", "value"), "[no-untyped-def]"),
    "unformatted file": (CLEAN.replace("return 2 * value", "return 2*value"), "would be reformatted"),
    "lint finding": ("import os\n" + CLEAN, "F401"),
}


def run_lint(tmp_path: Path, module_text: str) -> subprocess.CompletedProcess[str]:
    shutil.copy(PROJECT_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    package = tmp_path / "engine" / "services"
    package.mkdir(parents=True)
    (tmp_path / "engine" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "planted.py").write_text(module_text)
    env = dict(os.environ, LINT_ROOT=str(tmp_path), MYPY_CACHE_DIR=str(tmp_path / ".mypy_cache"), RUFF_NO_CACHE="true")
    return subprocess.run(
        ["bash", str(PROJECT_ROOT / "scripts" / "lint.sh"), "engine"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_clean_module_passes(tmp_path: Path) -> None:
    proc = run_lint(tmp_path, CLEAN)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "lint: ok" in proc.stdout


@pytest.mark.parametrize("fault", list(PLANTED))
def test_planted_fault_fails_the_gate(tmp_path: Path, fault: str) -> None:
    text, finding = PLANTED[fault]
    proc = run_lint(tmp_path, text)
    assert proc.returncode != 0, proc.stdout
    assert finding in proc.stdout + proc.stderr
    assert "lint: FAILED" in proc.stderr
