"""Where a region's dataset lives on disk.

    DATA_DIR/regions/<region>/current          -> symlink to versions/<version>
    DATA_DIR/regions/<region>/versions/<version>/
        manifest.json    format version, source hash, bbox, counts, build time, stages
        admin.sqlite     admin boundaries (stage "admin")
        search.sqlite    addresses, streets, places, POIs + FTS5 and R*Tree (stage "search")
        graph/           the routing graph and its preprocessing, numpy arrays (stage "roads")
        graph/derived/   arrays the query side derives from the graph, written by the same stage
                         (engine.routing.derived; absent from datasets of earlier releases)
        graph-foot/      the same for the foot and bicycle profiles (engine.routing.profiles),
        graph-bicycle/   when the import built them (manifest "profiles"); graph/ is the car's
        layers.sqlite    what the static-map renderer draws (stage "layers")

A version directory is complete and immutable once ``current`` points at it: an import builds
a new version beside the old one and swaps the symlink atomically.
"""

from __future__ import annotations

from pathlib import Path

# the format an import writes. 2: reverse geocoding's address points in their own table
# (``address_points`` in search.sqlite) and no longer in ``points_rtree``, where a release that
# reads only 1 would look for them and answer streets instead of addresses
FORMAT_VERSION = 2
# the formats this release opens, serves and publishes (a dataset of format 1 answers as before:
# engine.search.index falls back to ``points_rtree``); a re-import writes FORMAT_VERSION
READ_FORMAT_VERSIONS = frozenset({1, 2})
MANIFEST = "manifest.json"
ADMIN_DB = "admin.sqlite"
SEARCH_DB = "search.sqlite"
GRAPH_DIR = "graph"
LAYERS_DB = "layers.sqlite"


def readable_formats() -> str:
    """The formats this release reads, for messages: "1, 2"."""
    return ", ".join(str(v) for v in sorted(READ_FORMAT_VERSIONS))


def profile_graph_dir(profile: str) -> str:
    """The directory of a travel profile's routing graph: ``graph`` for the car (as before
    profiles existed), ``graph-<profile>`` for the others."""
    return GRAPH_DIR if profile == "car" else f"{GRAPH_DIR}-{profile}"


def regions_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "regions"


def region_dir(data_dir: Path, region: str) -> Path:
    return regions_dir(data_dir) / region


def current_link(data_dir: Path, region: str) -> Path:
    return region_dir(data_dir, region) / "current"


def versions_dir(data_dir: Path, region: str) -> Path:
    return region_dir(data_dir, region) / "versions"
