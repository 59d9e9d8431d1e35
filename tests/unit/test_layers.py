"""The import contracts (.importlinter, checked by ``lint-imports``) hold, and they can fail: a
scratch copy of the project's packages with one planted import breaks the contract it should.

The contracts: the engine imports nothing of the web, the workers, the accounts, the configuration
or the command line; the queue protocol nothing of the web; app/ in floors (ARCHITECTURE.md), each
importing only the floors below it; no cycle inside app/."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from config.settings import PROJECT_ROOT

PACKAGES = ("accounts", "app", "cli", "common", "config", "engine", "queueing", "tasks", "workers")
LINT_IMPORTS = Path(os.environ.get("VIRTUAL_ENV", PROJECT_ROOT / ".venv")) / "bin" / "lint-imports"

ENGINE = "engine imports nothing of app, tasks, workers, accounts, config, cli"
QUEUEING = "queueing imports nothing of app, tasks, workers, accounts, config, cli"
FLOORS = "app in floors: each imports only the floors below it"
ACYCLIC = "app has no import cycles"

# (file, import appended to it, the contract it breaks)
PLANTED = {
    "engine reads the configuration": ("engine/geo.py", "import config.settings", ENGINE),
    "queue protocol imports the web": ("queueing/metrics.py", "import app.errors", QUEUEING),
    "an error record imports a face": ("app/errors.py", "import app.calls", FLOORS),
    "dispatch imports the runtime built over it": ("app/dispatch.py", "import app.runtime", FLOORS),
    "two modules of one floor import each other": ("app/json_depth.py", "import app.bodies", ACYCLIC),
}


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(root))  # the copy's packages before the installed project
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )


def scratch_copy(tmp_path: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(
            PROJECT_ROOT / package,
            tmp_path / package,
            ignore=lambda _dir, names: [n for n in names if not (n.endswith(".py") or "." not in n)],
        )
    shutil.copy(PROJECT_ROOT / ".importlinter", tmp_path / ".importlinter")
    return tmp_path


def test_the_project_keeps_its_import_contracts() -> None:
    proc = lint_imports(PROJECT_ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for contract in (ENGINE, QUEUEING, FLOORS, ACYCLIC):
        assert f"{contract} KEPT" in proc.stdout, proc.stdout


def test_an_unchanged_copy_keeps_them(tmp_path: Path) -> None:
    proc = lint_imports(scratch_copy(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("plant", list(PLANTED))
def test_a_planted_import_breaks_its_contract(tmp_path: Path, plant: str) -> None:
    path, statement, contract = PLANTED[plant]
    root = scratch_copy(tmp_path)
    with (root / path).open("a") as module:
        module.write(f"\n{statement}  # planted by the test\n")
    proc = lint_imports(root)
    assert proc.returncode != 0, proc.stdout
    assert f"{contract} BROKEN" in proc.stdout, proc.stdout
