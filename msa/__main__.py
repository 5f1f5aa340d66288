"""``python -m msa`` (and the ``msa`` script) runs the command line.

``msa --version`` is answered here, before any import of the CLI (Typer and
its click: ~0.1 s of a 0.2 s run); every other command goes to the CLI. The
signal handlers come first, before the imports of NumPy, Numba and the CLI,
so that a run stopped at any moment exits 130 or 143 with one line.
"""
from __future__ import annotations

import sys


def print_version() -> None:
    """``msa --version``'s line (the CLI's option prints it too)."""
    from msa import __version__

    print(f"msa {__version__}")


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        print_version()
        return
    from msa._runtime.interrupts import process_handlers

    process_handlers()
    from msa.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
