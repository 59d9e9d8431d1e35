"""engine/beside.py: a step run beside the request's thread, or by it when the pool is busy."""

from __future__ import annotations

import os
import threading

import pytest

from engine import beside
from engine.beside import Beside


def test_the_step_runs_on_another_thread_when_a_pool_thread_is_free():
    started = threading.Event()

    def step() -> str:
        started.set()
        return threading.current_thread().name

    later = Beside(step)
    assert started.wait(5)  # running while the caller has not asked for its answer yet
    assert later.result().startswith("beside")


def test_its_error_reaches_the_caller():
    def step() -> None:
        raise ValueError("no such piece")

    with pytest.raises(ValueError, match="no such piece"):
        Beside(step).result()


def test_a_busy_pool_does_not_make_the_request_wait():
    """Every pool thread held by other steps: the caller runs its own step at once instead of
    queueing behind them (which would hang here until ``release``)."""
    release = threading.Event()
    holding = threading.Barrier(beside.POOL_THREADS + 1)

    def hold() -> None:
        holding.wait(5)
        release.wait(30)

    held = [Beside(hold) for _ in range(beside.POOL_THREADS)]
    try:
        holding.wait(5)  # every pool thread is in hold()
        caller = threading.current_thread().name
        result = Beside(threading.current_thread).result()
        assert result.name == caller
    finally:
        release.set()
        for step in held:
            step.result()


def test_a_forked_child_gets_a_pool_of_its_own():
    Beside(int).result()  # the parent's pool exists
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's pool threads are not here
        try:
            ok = Beside(lambda: threading.current_thread().name).result().startswith("beside")
            os.write(write, b"1" if ok else b"0")
        finally:  # never back into pytest in the child
            os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.waitpid(pid, 0)
    assert answer == b"1"
