"""Where the peers kit (../shared/peers) serves OSRM, Valhalla and Nominatim, and how to switch it
to a region. The addresses follow the kit's own settings (``lib.sh``): ``PEERS_DIR``,
``OSRM_CH_PORT`` (5000), ``OSRM_MLD_PORT`` (5001), ``VALHALLA_PORT`` (8002), ``NOMINATIM_PORT``
(8088), so that a benchmark run with another ``PEERS_DIR`` and other ports meets the peers that
kit started, and two runs on one machine need not share one set of servers."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

KIT = Path(os.environ.get("PEERS_KIT", "/work/shared/peers"))
PEERS_DIR = os.environ.get("PEERS_DIR", str(Path.home() / ".cache" / "meridian-peers"))  # the kit's own default
HOST = "127.0.0.1"


def _port(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


OSRM_CH = (HOST, _port("OSRM_CH_PORT", 5000))
OSRM_MLD = (HOST, _port("OSRM_MLD_PORT", 5001))
VALHALLA = (HOST, _port("VALHALLA_PORT", 8002))
NOMINATIM = (HOST, _port("NOMINATIM_PORT", 8088))


def url(address: tuple[str, int]) -> str:
    return f"http://{address[0]}:{address[1]}"


def _serve(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["./serve.sh", *args],
        cwd=KIT,
        env=dict(os.environ, PEERS_DIR=PEERS_DIR),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def peers_region() -> str | None:
    """The region the kit serves now, or None."""
    try:
        out = _serve("status", timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.splitlines():
        if line.startswith("region:"):
            name = line.split()[1]
            return None if name == "-" else name
    return None


def start_peers(region: str) -> None:
    """Switch the kit to ``region`` (it serves one region at a time) and wait until it answers."""
    done = _serve("start", region, timeout=600)
    done.check_returncode()
