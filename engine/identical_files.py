"""Files of a dataset version with the same content, stored once (hard links).

The travel profiles' graphs repeat each other where the profiles use the same ways: the foot and
bicycle graphs of a city whose streets both may use have the same geometry, snapper and isochrone
network, byte for byte, and within one graph a cost column may equal another (the weight is the
duration for car and foot). The import links every such file to the first of its kind, so the
version takes the disk, the page cache and the pull of one copy: two processes, or two profiles in
one process, that map the same inode share its pages.

A dataset's files are written once, by the import, and only read afterwards (memory-mapped
read-only); nothing opens them for writing again, so a link can never carry a change from one
path to the other. A file system without hard links keeps the copies.
"""

from __future__ import annotations

import hashlib
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

CHUNK = 1 << 20


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class LinkedFiles:
    linked: int  # paths that became links to an identical file
    bytes_saved: int

    def as_dict(self) -> dict[str, int]:
        return {"linked": self.linked, "bytes_saved": self.bytes_saved}


def _regular_files(directory: Path) -> list[Path]:
    return sorted(p for p in Path(directory).rglob("*") if p.is_file() and not p.is_symlink())


def _same_content_groups(files: list[Path]) -> list[list[Path]]:
    """Groups of two or more files with equal content, each in path order; only files that
    share their size with another are read."""
    by_size: dict[int, list[Path]] = defaultdict(list)
    for path in files:
        by_size[path.stat().st_size].append(path)
    groups: list[list[Path]] = []
    for same_size in by_size.values():
        if len(same_size) < 2:
            continue
        by_digest: dict[str, list[Path]] = defaultdict(list)
        for path in same_size:
            by_digest[sha256_of(path)].append(path)
        groups.extend(group for group in by_digest.values() if len(group) > 1)
    return groups


def hard_link(existing: Path, path: Path) -> bool:
    """Make ``path`` a hard link to ``existing``; False where the file system has none."""
    try:
        os.link(existing, path)
    except OSError:
        return False
    return True


def link_identical(directory: Path) -> LinkedFiles:
    """Replace every file of ``directory`` (recursively) whose content an earlier file (in path
    order) has by a hard link to that file. Atomic per path: a link is made under a temporary
    name and renamed over the copy."""
    linked = saved = 0
    for first, *copies in _same_content_groups(_regular_files(directory)):
        for copy in copies:
            if os.path.samefile(first, copy):
                continue
            size = copy.stat().st_size
            temporary = copy.with_name(f".{copy.name}.link")
            if not hard_link(first, temporary):  # no hard links on this file system: keep the copies
                return LinkedFiles(linked, saved)
            os.replace(temporary, copy)
            linked += 1
            saved += size
    return LinkedFiles(linked, saved)


def distinct_files(*directories: Path) -> list[Path]:
    """The directories' regular files, one path for each file linked under several names."""
    first: dict[tuple[int, int], Path] = {}
    for path in (path for directory in directories for path in _regular_files(directory)):
        stat = path.stat()
        first.setdefault((stat.st_dev, stat.st_ino), path)
    return list(first.values())


def distinct_bytes(*directories: Path) -> int:
    """The bytes the directories' regular files take, each linked file counted once (as ``du``)."""
    return sum(path.stat().st_size for path in distinct_files(*directories))
