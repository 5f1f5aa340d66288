"""A call made in a forked child process while this one does GIL-bound work of its own.

A short GPU run of ``msa add`` or ``msa merge`` spends its start importing CuPy (0.2-0.3 s of
Python) while it reads and profiles its inputs (0.25 s of NumPy and Python): on threads the
two share one GIL and take as long as in sequence (docs/start-up.md).
In a child made by ``fork`` the reading has an interpreter of its own. Its result comes back
through shared memory: the child pickles it with protocol 5, its arrays' bytes go out of band
into an anonymous shared mapping reserved before the fork, and the parent unpickles them as
views of that mapping, without a copy; the rest of the pickle (names, small objects) and any
error go through a pipe.

Only a process with no other thread forks (a lock held by another thread at the fork would
be held for ever in the child), and only on Linux; elsewhere, or where the mapping cannot be
reserved, the call is made in this process when its result is asked for, so the result is
the same either way. A child that dies without an answer (killed, out of memory) is likewise
replaced by the call made here; a parent that dies (killed outright) takes the child with it
(``PR_SET_PDEATHSIG``), so no reading outlives the command. Notes the call prints through
:func:`msa.progress.current` are collected in the child and printed by the parent.
"""
from __future__ import annotations

import ctypes
import mmap
import os
import pickle
import signal
import struct
import sys
import threading
import traceback
from typing import Callable, Generic, TypeVar

from msa.interrupts import blocking, check
from msa.progress import NoteRecorder, current

T = TypeVar("T")

#: Arrays are placed in the shared mapping at multiples of this many bytes (a cache line).
ALIGN = 64
_HEADER = struct.Struct("<Q")
#: prctl's option that sets the signal a process gets when its parent dies (linux/prctl.h).
PR_SET_PDEATHSIG = 1


class ForkedCall(Generic[T]):
    """``fn(*args)``, begun in a child process at once (see the module's docstring); ``result()``
    waits for it. Use as a context manager: leaving the block kills a child whose result was
    not taken (an error elsewhere) and reaps it.

    ``reserve``: bytes of shared memory for the result's arrays (address space only: pages are
    used as they are written). A result whose arrays do not fit comes back through the pipe.
    """

    def __init__(self, fn: Callable[..., T], *args: object, reserve: int) -> None:
        self._fn, self._args = fn, args
        self._pid: int | None = None
        self._shared: mmap.mmap | None = None
        if not forkable():
            return
        try:
            flags = mmap.MAP_SHARED | getattr(mmap, "MAP_NORESERVE", 0)
            self._shared = mmap.mmap(-1, max(ALIGN, reserve), flags=flags)
        except (OSError, ValueError, OverflowError):
            return
        self._read_end, write_end = os.pipe()
        parent = os.getpid()
        try:
            pid = os.fork()
        except OSError:  # no process to be had: the call is made here
            os.close(self._read_end)
            os.close(write_end)
            return
        if pid == 0:  # the child: never returns
            os.close(self._read_end)
            _die_with(parent)
            _child(fn, args, self._shared, write_end)
        self._pid = pid
        os.close(write_end)

    def __enter__(self) -> ForkedCall[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pid is not None:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._reap()

    @property
    def forked(self) -> bool:
        """Whether a child is making the call (else it is made here by ``result()``)."""
        return self._pid is not None

    def result(self) -> T:
        """The call's value, or its exception raised here; its notes are printed here first.
        Asked for once (a second time, the call would be made again here)."""
        if self._pid is None:
            return self._fn(*self._args)
        with os.fdopen(self._read_end, "rb") as pipe, blocking():  # a signal ends the wait (and the child, on exit)
            message = pipe.read()
        self._reap()
        check()  # a signal that stopped the child stops the run here
        if len(message) < _HEADER.size:  # died without an answer: make the call here
            return self._fn(*self._args)
        (n_spans,) = _HEADER.unpack_from(message)
        spans = struct.unpack_from(f"<{2 * n_spans}Q", message, _HEADER.size)
        body = memoryview(message)[_HEADER.size + 16 * n_spans :]
        assert self._shared is not None
        view = memoryview(self._shared)
        ok, value, notes = pickle.loads(
            body, buffers=[view[spans[i] : spans[i] + spans[i + 1]] for i in range(0, len(spans), 2)]
        )
        for note in notes:
            current().note(note)
        if not ok:
            raise value
        return value

    def _reap(self) -> None:
        pid, self._pid = self._pid, None
        if pid is not None:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def forkable() -> bool:
    """Whether a call can be made in a forked child here (Linux, no other thread running)."""
    return sys.platform.startswith("linux") and hasattr(os, "fork") and threading.active_count() == 1


def _die_with(parent: int) -> None:
    """Have the kernel kill this child when its parent dies (``prctl(PR_SET_PDEATHSIG,
    SIGKILL)``: the thread that forked, the parent's only one), and leave at once if the parent
    died before that was set."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(1)


def _child(fn: Callable[..., object], args: tuple, shared: mmap.mmap, out: int) -> None:
    """Make the call and write its answer; exit without running any of the parent's exit
    handlers or flushing its buffers (they belong to the parent)."""
    try:
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, signal.SIG_DFL)
        recorder = NoteRecorder()
        try:
            with recorder.running():
                value: tuple = (True, fn(*args), recorder.notes)
        except BaseException as exc:  # noqa: BLE001 (every error goes to the parent)
            value = (False, _portable(exc), recorder.notes)
        message = _pack(value, shared)
        with os.fdopen(out, "wb") as pipe:
            pipe.write(message)
    finally:
        os._exit(0)


def _pack(value: tuple, shared: mmap.mmap) -> bytes:
    """The pipe's message: the number of spans, each array's (offset, length) in ``shared``,
    then the pickle; where the arrays do not fit, no spans and everything in the pickle."""
    buffers: list[pickle.PickleBuffer] = []
    body = pickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    spans: list[int] = []
    at = 0
    for buffer in buffers:
        raw = buffer.raw()
        if at + raw.nbytes > len(shared):
            body, spans = pickle.dumps(value, protocol=5), []
            break
        shared[at : at + raw.nbytes] = raw
        spans += [at, raw.nbytes]
        at += -(-raw.nbytes // ALIGN) * ALIGN
    return _HEADER.pack(len(spans) // 2) + struct.pack(f"<{len(spans)}Q", *spans) + body


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a RuntimeError saying what it was. An unexpected
    error (one the CLI does not report as its one line) carries the child's traceback as a note,
    shown with the parent's."""
    expected = isinstance(exc, (ValueError, OSError, EOFError, MemoryError))
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        pickle.loads(pickle.dumps(exc, protocol=5))
    except Exception:  # noqa: BLE001 (any exception that cannot be rebuilt)
        exc = RuntimeError(f"{type(exc).__name__}: {exc}")
    if not expected and hasattr(exc, "add_note"):
        exc.add_note(f"in the forked child:\n{text}")
    return exc
