"""Print the fingerprint of a region's current dataset version: the manifest's counts and a hash
of every table and array the import produced.

    python scripts/dataset_fingerprint.py DATA_DIR REGION [--json]

Two imports of the same extract by code that should build the same dataset (a refactor, a
dependency upgrade) must print the same lines. SQLite tables (virtual tables and their shadow
tables included) are hashed over their rows in sorted order, so only content counts, not page
layout; every other file (``.npy`` arrays, JSON side files) over its bytes. The manifest's
timings, paths and version name differ between any two imports and are left out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import sys
from pathlib import Path

from engine import layout

SKIPPED_FILES = {layout.MANIFEST}
VOLATILE_JSON_KEYS = {"seconds", "source"}  # top-level keys of a JSON side file: timings, a path


def _digest(parts: list[str]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\n")
    return digest.hexdigest()[:16]


def sqlite_fingerprint(path: Path) -> dict[str, str]:
    """One entry per table: "<rows> rows <hash of the sorted rows>"."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        tables: dict[str, str] = {}
        for name in names:
            rows = sorted(repr(row) for row in conn.execute(f'SELECT * FROM "{name}"'))
            tables[name] = f"{len(rows)} rows {_digest(rows)}"
        return tables
    finally:
        conn.close()


def json_fingerprint(path: Path) -> str:
    content = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(content, dict):
        content = {k: v for k, v in content.items() if k not in VOLATILE_JSON_KEYS}
    text = json.dumps(content, sort_keys=True, ensure_ascii=False)
    return f"{len(text)} chars {_digest([text])}"


def file_fingerprint(path: Path) -> str:
    data = path.read_bytes()
    return f"{len(data)} bytes {hashlib.sha256(data).hexdigest()[:16]}"


def dataset_fingerprint(version_dir: Path) -> dict[str, object]:
    """The manifest's counts and bbox, and a hash per produced table or file."""
    manifest = json.loads((version_dir / layout.MANIFEST).read_text(encoding="utf-8"))
    outputs: dict[str, object] = {}
    for path in sorted(p for p in version_dir.rglob("*") if p.is_file()):
        relative = str(path.relative_to(version_dir))
        if relative in SKIPPED_FILES:
            continue
        if path.suffix == ".sqlite":
            outputs[relative] = sqlite_fingerprint(path)
        elif path.suffix == ".json":
            outputs[relative] = json_fingerprint(path)
        else:
            outputs[relative] = file_fingerprint(path)
    return {"counts": manifest["counts"], "bbox": manifest.get("bbox"), "outputs": outputs}


def as_lines(fingerprint: dict[str, object]) -> list[str]:
    lines = [f"counts {json.dumps(fingerprint['counts'], sort_keys=True)}", f"bbox {fingerprint['bbox']}"]
    outputs = fingerprint["outputs"]
    assert isinstance(outputs, dict)
    for name, value in outputs.items():
        if isinstance(value, dict):
            lines.extend(f"{name}:{table} {summary}" for table, summary in value.items())
        else:
            lines.append(f"{name} {value}")
    lines.append(f"total {_digest(lines)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("region")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of lines")
    args = parser.parse_args(argv)
    current = layout.current_link(args.data_dir, args.region)
    if not current.exists():
        print(f"no current version for region {args.region!r} under {args.data_dir}", file=sys.stderr)
        return 2
    fingerprint = dataset_fingerprint(current.resolve())
    if args.json:
        print(json.dumps(fingerprint, indent=2, sort_keys=True))
    else:
        print("\n".join(as_lines(fingerprint)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
