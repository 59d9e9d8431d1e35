"""Whether a process is still running, by its pid (shared by the web workers' connection balance
and the import's clean-up of builds whose importer is gone)."""

from __future__ import annotations

import os


def process_alive(pid: int) -> bool:
    """The process ``pid`` exists (signal 0 checks without sending: another user's process counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
