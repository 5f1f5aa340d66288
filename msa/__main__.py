"""``python -m msa`` (and the ``msa`` script) runs the command line.

The signal handlers come first, before the imports of NumPy, Numba and the
CLI, so that a run stopped at any moment exits 130 or 143 with one line.

The process then ends without the interpreter's teardown (:func:`_leave`): by the
time a command returns, its outputs are whole and renamed, and what is left to
tear down (the CUDA context, CuPy's memory pools, Numba's threads, every module's
objects) is freed by the operating system anyway.
"""
from __future__ import annotations

import os
import sys
import threading
from typing import NoReturn


def main() -> None:
    from msa.interrupts import process_handlers

    process_handlers()
    from msa.cli import main as cli_main

    try:
        cli_main()
    except SystemExit as exc:
        _leave(exc.code)
    _leave(0)


def _leave(code: object) -> NoReturn:
    """Exit with ``code`` (``sys.exit``'s meaning) through ``os._exit`` once stdout and stderr are
    flushed, skipping atexit handlers and the interpreter's teardown. Where something may still
    need them (a thread that is not a daemon, child processes or multiprocessing's finalizers,
    a Dask cluster) or a stream cannot be flushed (a closed pipe), it exits the usual way."""
    if isinstance(code, bool) or not isinstance(code, int):
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if others or "distributed" in sys.modules or _processes_left():
        sys.exit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)
    os._exit(code)


def _processes_left() -> bool:
    """Whether multiprocessing has something the usual exit tidies: live child processes, or
    finalizers (pools, managers, named semaphores; its resource tracker comes with them).
    Numba imports multiprocessing in every run that starts its threads, for a lock that
    needs neither."""
    mp = sys.modules.get("multiprocessing")
    if mp is None:
        return False
    registry = getattr(sys.modules.get("multiprocessing.util"), "_finalizer_registry", None)
    return bool(mp.active_children()) or registry is None or bool(registry)


if __name__ == "__main__":
    main()
