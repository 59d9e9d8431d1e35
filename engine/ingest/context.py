"""What an import stage gets: the source, where to write, and what earlier stages produced."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.progress import ImportProgress


@dataclass
class ImportContext:
    pbf_path: Path
    region: str
    out_dir: Path  # the new version's directory, not yet visible to readers
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("meridian.ingest"))
    # the travel profiles the roads stage builds (engine.routing.profiles.NAMES order)
    profiles: tuple[str, ...] = ("car", "foot", "bicycle")
    # what the stages report of their long steps (the CLI's shows them on the terminal)
    progress: ImportProgress = field(default_factory=ImportProgress.silent)
    # Results later stages may reuse, e.g. shared["admin_areas"] (see engine.ingest.admin).
    shared: dict[str, Any] = field(default_factory=dict)
