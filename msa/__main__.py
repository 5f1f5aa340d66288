"""``python -m msa`` (and the ``msa`` script) runs the command line in this process.

A command's work runs here and in children that end with it: nothing keeps running after
``msa`` returns. ``msa --version`` is answered before any import of the CLI (Typer and its
click: ~0.1 s of a 0.2 s run). The signal handlers come first, before the imports of NumPy,
Numba and the CLI, so that a run stopped at any moment exits 130 or 143 with one line; just
before them, where the interpreter keeps no bytecode for those packages, msa points it at a
cache of its own (:mod:`msa._runtime.bytecode`), and NumPy's BLAS at one thread
(:mod:`msa._runtime.blas`). Once the command is done the process ends
without the interpreter's teardown (:func:`run`).
"""
from __future__ import annotations

import os
import sys
import threading
from typing import NoReturn

from msa import __version__
from msa._runtime.blas import one_blas_thread
from msa._runtime.bytecode import keep_bytecode
from msa._runtime.collector import begin
from msa.interrupts import process_handlers


def main() -> None:
    """The command of ``sys.argv``; returns (or raises SystemExit), for callers in Python."""
    if sys.argv[1:] == ["--version"]:
        print(f"msa {__version__}")
        return
    begin()
    keep_bytecode()
    one_blas_thread()
    process_handlers()
    from msa.cli import main as cli_main  # local: (c) Typer: not for --version (docs/start-up.md, step 1)

    cli_main()


def run() -> NoReturn:
    """The ``msa`` script and ``python -m msa``: :func:`main`, then the process ends.

    The interpreter's teardown (every module's objects freed, Numba's and LLVM's among them:
    10-29 ms of CPU on the 2-core dev machine, docs/start-up.md) comes after the outputs are
    whole, so the process ends by ``os._exit`` once the command is done and :func:`flushed`;
    otherwise by the usual ``sys.exit``."""
    process_handlers()  # a signal before the command started: one line, 130 or 143
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    if not (isinstance(code, int) or code is None):
        print(code, file=sys.stderr)  # sys.exit's rule: a message is printed, the status is 1
        code = 1
    if not flushed():
        sys.exit(code)
    os._exit(code or 0)


def flushed() -> bool:
    """Flush the standard streams and logging; False where the process must end by the
    interpreter's own exit instead: another Python thread or Dask (whose cluster has its own
    shutdown) in the process, or a stream that cannot be flushed (a closed pipe)."""
    if threading.active_count() > 1 or "distributed" in sys.modules:
        return False
    try:
        if "logging" in sys.modules:
            import logging

            logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None: the descriptor was closed before the start
                stream.flush()
    except (OSError, ValueError):
        return False
    return True


if __name__ == "__main__":
    run()
