"""Run one import stage in a child process of its own, so that what it allocates leaves with it.

A stage that makes millions of short-lived Python objects beside long-lived ones (the search
stage: an address's tags, records and rows around the string pools and indexes it keeps) leaves
CPython's small-object allocator with arenas that each still hold a live block: at 1M road nodes,
486 arenas of 1 MB holding 44 MB of objects when the stage had returned. Neither the garbage
collector nor ``malloc_trim`` can give those back, and the next stage's peak counted them. A
child process gives all of its memory back when it exits.

The child is *spawned* (a fresh interpreter), not forked: a forked child inherits the parent's
libraries without their threads, and osmium's reading thread pool, started by an earlier stage
(or an earlier import of the same process), then waits forever for workers that are not there.
So the call and its arguments travel pickled; the result (or the exception) comes back through a
pipe, and with ``output``, what the child writes to its stream comes through that pipe as it is
written, to the parent's stream (a terminal, a log, a test's buffer alike).

In a daemonic process (which may have no children) the call runs in the process, as before.

A child, started by :func:`start_child`, does not outlive the process that started it
(:func:`die_with_parent`): an import stopped by a signal, the out-of-memory killer or ``docker
stop`` takes its children with it, rather than leaving them reading, writing and holding
gigabytes for as long as their work takes.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import pickle
import signal
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, Generic, TextIO, TypeVar, cast

from engine.errors import DatasetError

T = TypeVar("T")
CHILD_POLL_S = 0.5  # how often the parent looks whether a silent child is still alive


PR_SET_PDEATHSIG = 1  # prctl(2): the signal this process gets when its parent thread ends


def die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when ``parent``, the process that started it, ends,
    however it ends (prctl ``PR_SET_PDEATHSIG``; Linux only, a no-op elsewhere). The parent
    may have ended before the call: then this process exits at once."""
    if not sys.platform.startswith("linux"):
        return
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # a C library without prctl: the child lives as before
        return
    if prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return  # not allowed here (a sandbox): likewise
    if os.getppid() != parent:
        os._exit(1)


SPAWN = multiprocessing.get_context("spawn")  # a fresh interpreter, not a fork (module doc)


def start_child(target: Callable[..., None], args: tuple[Any, ...], name: str) -> BaseProcess:
    """A started child process (spawned, ``name``) that runs ``target(*args)`` and dies with this
    process (:func:`die_with_parent`); ``target`` and ``args`` travel pickled."""
    process = SPAWN.Process(target=_dying_with_parent, args=(os.getpid(), target, args), name=name)
    process.start()
    return process


def _dying_with_parent(parent: int, target: Callable[..., None], args: tuple[Any, ...]) -> None:
    die_with_parent(parent)
    target(*args)


def can_have_children() -> bool:
    """This process may start children (a daemonic one, such as a worker of a process pool, may not)."""
    return not multiprocessing.current_process().daemon


def call_in_child(fn: Callable[..., T], *args: Any, output: TextIO | None = None) -> T:
    """``fn(*args)`` in a spawned child (``fn`` importable, ``args`` and the result picklable);
    its result, or its exception raised here. With ``output``, the child calls ``fn(*args,
    stream)`` instead, ``stream`` a text stream whose writes reach ``output`` here. A child that
    dies without an answer (the kernel's out-of-memory killer, a signal) is a
    :class:`DatasetError` naming its exit code."""
    with ChildCall(fn, *args, output=output) as call:
        return call.result()


class ChildCall(Generic[T]):
    """``fn(*args)`` started in a spawned child as :func:`call_in_child` runs it, while this process
    goes on; :meth:`result` waits for it. Leaving the ``with`` block stops a child whose result was
    not taken (this process failed meanwhile). In a process that may not have children, the call
    runs in :meth:`result`."""

    def __init__(self, fn: Callable[..., T], *args: Any, output: TextIO | None = None) -> None:
        self._fn, self._args, self._output = fn, args, output
        self._child: BaseProcess | None = None
        if not can_have_children():
            return
        self._receiver, sender = SPAWN.Pipe(duplex=False)
        self._child = start_child(_answer, (sender, fn, args, output is not None), f"meridian-{fn.__name__}")
        sender.close()  # the child's end: recv() sees EOF when the child dies without answering

    def result(self) -> T:
        child, output = self._child, self._output
        if child is None:
            return self._fn(*self._args, output) if output is not None else self._fn(*self._args)
        try:
            ok, value = _outcome(self._receiver, output, child)
            child.join()
        except EOFError:
            child.join()
            raise DatasetError(
                f"the import's child process exited with code {child.exitcode} before it finished "
                "(out of memory? see the system log)"
            ) from None
        finally:
            self.close()
        if ok:
            return cast(T, value)
        raise value

    def close(self) -> None:
        """Stop the child if it still runs; release the pipe."""
        if self._child is None:
            return
        self._receiver.close()
        if self._child.is_alive():
            self._child.terminate()
            self._child.join()

    def __enter__(self) -> ChildCall[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _outcome(receiver: Connection, output: TextIO | None, child: BaseProcess) -> tuple[bool, Any]:
    """The child's (ok, result or exception), writing its text to ``output`` until then. EOFError
    when the child is gone without an answer: also a child that died before it took its end of
    the pipe, whose copy the parent's resource sharer still holds open (so no EOF would come)."""
    while True:
        if not receiver.poll(CHILD_POLL_S):
            if child.is_alive():
                continue
            if not receiver.poll(0):
                raise EOFError
        kind, *payload = receiver.recv()
        if kind == "text" and output is not None:
            output.write(payload[0])
            output.flush()
        elif kind == "outcome":
            return payload[0], payload[1]


class _PipeStream:
    """The child's text stream: each write is a message to the parent."""

    def __init__(self, sender: Connection) -> None:
        self._sender = sender

    def write(self, text: str) -> int:
        self._sender.send(("text", text))
        return len(text)

    def flush(self) -> None:
        pass


def _answer(sender: Connection, fn: Callable[..., Any], args: tuple[Any, ...], streamed: bool) -> None:
    try:
        result = fn(*args, _PipeStream(sender)) if streamed else fn(*args)
        outcome: tuple[bool, Any] = (True, result)
    except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it
        outcome = (False, portable(exc))
    sender.send(("outcome", *outcome))
    sender.close()


def portable(exc: Exception) -> Exception:
    """The exception itself when it survives pickling, else one that says the same."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any failure to pickle or unpickle
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc
