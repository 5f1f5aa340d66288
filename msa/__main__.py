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
    from msa.interrupts import process_handlers

    keep_bytecode()
    process_handlers()
    from msa.cli import main as cli_main

    cli_main()


def run() -> NoReturn:
    """The ``msa`` script and ``python -m msa``: the command on a warm server where there is one
    (:mod:`msa._runtime.server`), else :func:`main` in this process, which then starts a server
    for the next run.

    The interpreter's teardown (every module's objects freed, Numba's and LLVM's among them)
    took ~7 ms of a 0.3 s run on the 2-core dev machine (30 ms without the collector frozen at
    exit, msa.cli.app), after the outputs were whole, so the process ends by ``os._exit`` once
    the command is done and :func:`flushed`; otherwise by the usual ``sys.exit``. :func:`main`
    itself returns, for callers in Python."""
    from msa._runtime import client
    from msa.interrupts import process_handlers

    process_handlers()  # a signal before the command started: one line, 130 or 143
    status = client.client(sys.argv)
    if status is None:
        status = in_process()
        client.start_server(status)
        if not flushed():
            sys.exit(status)
    os._exit(status)


def in_process() -> int:
    """:func:`main`'s exit status."""
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    if isinstance(code, int) or code is None:
        return code or 0
    print(code, file=sys.stderr)  # sys.exit's rule: a message is printed, the status is 1
    return 1


def serve(path: str) -> None:
    """A warm server's process (started by :func:`msa._runtime.client.start_server`): each
    client's command is :func:`in_process`, its streams flushed."""
    from msa._runtime import server

    def command() -> int:
        status = in_process()
        if not flushed():  # a thread still runs (the spare's GPU warm-up): the streams all the same
            try:
                _flush_streams()
            except (OSError, ValueError):
                pass
        return status

    server.serve(path, command)


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
        _flush_streams()
    except (OSError, ValueError):
        return False
    return True


def _flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:  # None: the descriptor was closed before the start
            stream.flush()


if __name__ == "__main__":
    run()
