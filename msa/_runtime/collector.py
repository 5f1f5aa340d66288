"""The garbage collector of a command's process: off while the command starts.

A command's start imports NumPy, Numba and msa and loads its compiled functions: ~10^5 objects
that live as long as the process. The collector finds no garbage among them, yet with its
thresholds it walked them ~40 times as they were made (13 ms of a 0.3 s run of a 10^3 family on
the 2-core dev machine, docs/start-up.md). So it is paused while the process starts
(from the entry until the CLI has parsed the command, :func:`begin`, and while the backend
starts, :func:`pause`), and on :func:`resume` what the start made is frozen out of every later collection
(``gc.freeze``) and the collector runs again, with fewer young collections than Python's
default. Data arrays are not tracked by the collector, so none of this moves memory. Only the
process that :func:`begin` made a command's is touched: a library user's or a test runner's
keeps its collector as it has it.

A start that compiled (no shipped code for this Numba, CPU or source) leaves several times more
young objects, much of them garbage cycles of the compiler: those are collected, not frozen.
"""
from __future__ import annotations

import atexit
import functools
import gc

#: Python's young-generation threshold is 700 objects; a command's Python objects are few and
#: large (the arrays hold the data), so young collections are rarer.
THRESHOLDS = (10_000, 50, 50)
#: Young objects past which :func:`resume` collects instead of freezing: a start from the shipped
#: compiled code leaves ~7x10^4 (a 10^3 family on the 2-core dev machine), one that compiled its
#: first functions (an editable install's first run) ~2.7x10^5.
FREEZE_MAX = 150_000


_command = False


def begin() -> None:
    """This process runs a command (``msa``'s entry) and is starting: no collection until
    :func:`resume`."""
    global _command
    _command = True
    gc.disable()


def pause() -> None:
    """In a command's process, no collection until :func:`resume` (the backend is starting)."""
    if _command:
        gc.disable()


def resume() -> None:
    """The start is over: its objects frozen (or, after a compile, collected) and the collector
    on with :data:`THRESHOLDS`. Idempotent."""
    if not _command or gc.isenabled():
        return
    if gc.get_count()[0] > FREEZE_MAX:
        gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    gc.enable()
    _freeze_at_exit()


@functools.cache
def _freeze_at_exit() -> None:
    """A process that ends by the interpreter's exit (another thread alive, Dask) skips its
    last full collection."""
    atexit.register(gc.freeze)
