"""``python -m msa`` (and the ``msa`` script) runs the command line.

``msa --version`` is answered here, before any import of the CLI (Typer and
its click: ~0.1 s of a 0.2 s run); every other command goes to the CLI. The
signal handlers come first, before the imports of NumPy, Numba and the CLI,
so that a run stopped at any moment exits 130 or 143 with one line; just before
them, where the interpreter keeps no bytecode for those packages, msa points it
at a cache of its own (:mod:`msa._runtime.bytecode`). Once the
command is done the process ends without the interpreter's teardown (:func:`run`).
"""
from __future__ import annotations

import os
import sys
import threading
from typing import NoReturn


def print_version() -> None:
    """``msa --version``'s line (the CLI's option prints it too)."""
    from msa import __version__

    print(f"msa {__version__}")


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        print_version()
        return
    from msa._runtime.bytecode import keep_bytecode
    from msa._runtime.interrupts import process_handlers

    keep_bytecode()
    process_handlers()
    from msa.cli import main as cli_main

    cli_main()


def run() -> NoReturn:
    """The ``msa`` script and ``python -m msa``: :func:`main`, then the process ends at once.

    The interpreter's teardown (every module's objects freed, Numba's and LLVM's among them)
    took ~7 ms of a 0.3 s run on the 2-core dev machine (30 ms without the collector frozen at
    exit, msa.cli.app), after the outputs were whole. Once
    the command has returned or exited, with the standard streams and logging flushed and no
    other Python thread nor Dask (whose cluster has its own shutdown) in the process, it ends
    by ``os._exit``; otherwise, or where a stream cannot be flushed (a closed pipe), by the
    usual ``sys.exit``. :func:`main` itself returns, for callers in Python."""
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    if isinstance(code, int) or code is None:
        status = code or 0
    else:  # sys.exit's rule: a message is printed, the status is 1
        print(code, file=sys.stderr)
        status = 1
    if threading.active_count() > 1 or "distributed" in sys.modules:
        sys.exit(status)
    try:
        if "logging" in sys.modules:
            import logging

            logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None: the descriptor was closed before the start
                stream.flush()
    except (OSError, ValueError):
        sys.exit(status)
    os._exit(status)


if __name__ == "__main__":
    run()
