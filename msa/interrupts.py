"""SIGINT and SIGTERM stop a run at its next checkpoint, leaving no partial file.

The command line (:func:`msa.cli.common._errors`) installs :func:`handling` for the
length of a command. The handler only notes the signal; :func:`check`, called
at the checkpoints of a run (every progress stage's start and end and every
``advance`` of its bar, each PartTree depth, each progressive level), raises
:class:`Interrupted` (a KeyboardInterrupt) there, so every atomic output
(:func:`msa.io.open_output`) on the way out removes its temporary file; the
CLI then prints one line and exits 128 + the signal number (130, 143).

The handler must not raise by itself (except inside :func:`blocking`, below): Python runs it at any bytecode of the
main thread, including callbacks that Numba's compiled kernels make into the
interpreter, and an exception raised there left Numba's state broken (a
SystemError, or a segmentation fault at the next kernel; measured on a
2,056-sequence CPU run killed at random points). The price is latency: a run
stops when the kernel it is in returns (a progressive level, a PartTree depth,
an exact tree of up to ``exact_tree_max`` sequences: well under a second for
thousands of sequences on the CPU, more for the largest single merges).

Two moments must not be cut:

* Making an output's temporary file: an exception just after ``mkstemp`` made
  it and before ``open_output`` is ready to remove it would strand the
  ``.part`` file. :func:`entered_whole` enters such a context manager with
  signals :func:`held` (no checkpoint raises meanwhile).
* The end of a one-output run: once the output is complete in its temporary
  file, :func:`finished` makes later signals no-ops, so the run renames it and
  exits 0. Exit 130/143 thus always means no output was written. A run of many
  outputs (``-O``) has no such point: each output is renamed whole, and a
  signal stops the run between or inside families.

A read that waits (a FIFO with no writer yet, ``sleep 60 | msa align -``) reaches no
checkpoint: Python retries a system call that a signal interrupted once the handler has
returned. Such a wait runs inside :func:`blocking`, where the handler raises
:class:`Interrupted` itself; that is safe there, since no compiled kernel is running, and
the interrupted call then gives up instead of waiting on.

``python -m msa`` installs the handler first thing (:func:`process_handlers`):
a signal before the command starts (during the imports) exits at once, with
the same line and status; nothing has been written yet.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from typing import ContextManager, TypeVar

T = TypeVar("T")

#: The signals that stop a run cleanly.
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A run stopped by a signal; ``exit_status`` is the shell's 128 + its number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


class _State:
    installed = False  # our handler is the process's (process_handlers) or the command's (handling)
    command = False  # inside a command: note signals for check() (else: exit at once)
    pending: int | None = None  # the first signal, not raised yet
    raised = False  # Interrupted was raised: later signals wait for the cleanup to end
    held = 0  # depth of held() sections
    finished = False  # the run's output is complete: signals are ignored
    blocking = 0  # depth of blocking() sections: the handler raises at once


_state = _State()


def _handler(signum: int, frame: object) -> None:
    if not _state.command:
        if _state.finished:
            return
        os.write(2, b"msa: interrupted\n")  # before the command (imports): nothing to clean up
        os._exit(128 + signum)
    if _state.pending is None and not _state.raised and not _state.finished:
        _state.pending = signum
        if _state.blocking and not _state.held:
            check()


def check() -> None:
    """A checkpoint: raise Interrupted if a signal came (in the main thread, not inside held(),
    not once finished)."""
    if (
        _state.pending is not None and not _state.held and not _state.finished
        and threading.current_thread() is threading.main_thread()
    ):
        signum, _state.pending = _state.pending, None
        _state.raised = True
        raise Interrupted(signum)


def process_handlers() -> None:
    """For ``python -m msa`` and the ``msa`` script, before the heavy imports."""
    for s in SIGNALS:
        signal.signal(s, _handler)
    _state.installed = True


@contextlib.contextmanager
def handling() -> Iterator[None]:
    """Signals are noted for check() while the block runs (main thread only; elsewhere a
    no-op). Handlers installed here are restored after the block; the first signal counts,
    later ones wait for the cleanup it starts (SIGKILL still stops a stuck process)."""
    if threading.current_thread() is not threading.main_thread() or _state.command:
        yield
        return
    previous = None if _state.installed else {s: signal.signal(s, _handler) for s in SIGNALS}
    _state.installed = _state.command = True
    _state.pending, _state.raised, _state.held, _state.finished = None, False, 0, False
    try:
        yield
    finally:
        _state.command, _state.pending, _state.raised, _state.held = False, None, False, 0
        _state.blocking = 0
        if previous is not None:
            for s, handler in previous.items():
                signal.signal(s, handler)
            _state.installed, _state.finished = False, False


@contextlib.contextmanager
def held() -> Iterator[None]:
    """A section no checkpoint cuts short; a signal that came meanwhile is raised at its end."""
    _state.held += 1
    try:
        yield
    finally:
        _state.held -= 1
    check()


@contextlib.contextmanager
def blocking() -> Iterator[None]:
    """A section that may wait on a read or an open with no checkpoint: a signal raises
    Interrupted at once (only Python code of the main thread runs here; see the module's notes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    check()
    _state.blocking += 1
    try:
        yield
    finally:
        _state.blocking -= 1


@contextlib.contextmanager
def entered_whole(manager: ContextManager[T]) -> Iterator[T]:
    """``with manager`` entered with signals held: a signal that came meanwhile is raised once
    it is entered, so its ``__exit__`` cleans up what its ``__enter__`` made."""
    with contextlib.ExitStack() as stack:
        with held():
            value = stack.enter_context(manager)
        yield value


def stopping() -> None:
    """The command is ending on an error: a signal now would only cut its line short."""
    if _state.command:
        _state.raised = True
        _state.pending = None


def finished() -> None:
    """The run's output is complete (only its rename is left): later signals are ignored."""
    if _state.command:
        _state.finished = True
        _state.pending = None
