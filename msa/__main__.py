"""``python -m msa`` (and the ``msa`` script) runs the command line.

The signal handlers come first, before the imports of NumPy, Numba and the
CLI, so that a run stopped at any moment exits 130 or 143 with one line.
"""
from __future__ import annotations


def main() -> None:
    from msa._runtime.interrupts import process_handlers

    process_handlers()
    from msa.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
