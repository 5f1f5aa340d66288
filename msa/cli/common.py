"""What every command shares: one-line errors and interruptions, and its reports."""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator

import typer

from msa._runtime import interrupts
from msa.backends import BackendUnavailable, DeviceMemoryError
from msa.io import InputError


def _plain(value: object) -> object:
    """JSON for NumPy scalars in the score dict."""
    item = getattr(value, "item", None)
    if item is None:
        raise TypeError(f"cannot write {type(value).__name__} as JSON")
    return item()


@contextlib.contextmanager
def _errors() -> Iterator[None]:
    """Expected failures as one line on stderr and a non-zero exit, never a traceback.

    SIGINT and SIGTERM are noted meanwhile and raise msa._runtime.interrupts.Interrupted at the run's
    next checkpoint: the outputs on the way out remove their temporary files, and the run
    ends with ``msa: interrupted`` and exit status 130 or 143 (128 + the signal's number).
    """
    with interrupts.handling():
        try:
            yield
        except BrokenPipeError:
            interrupts.stopping()
            # The reader of stdout went away (`msa align x.fa | head`): stop quietly.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(1) from None
        except (InputError, BackendUnavailable, ValueError, OSError, EOFError) as exc:
            interrupts.stopping()  # a signal now would only cut the line short
            typer.echo(f"msa: error: {_message(exc)}", err=True)
            raise typer.Exit(1) from None
        except MemoryError as exc:  # CuPy's OutOfMemoryError outside the pieces that catch it
            interrupts.stopping()
            device = DeviceMemoryError.from_exception(exc)
            typer.echo(f"msa: error: {device if device is not None else f'out of memory ({_message(exc)})'}", err=True)
            raise typer.Exit(1) from None
        except KeyboardInterrupt as exc:
            typer.echo("msa: interrupted", err=True)
            raise typer.Exit(getattr(exc, "exit_status", 130)) from None


def _message(exc: BaseException) -> str:
    """One line, with the file name first for OS errors."""
    from msa.run.results import one_line

    return one_line(exc)


def _output_note(output: str | None, nbytes: int | None) -> str:
    """``-v``'s line on the output's size."""
    where = "stdout" if output is None or output == "-" else output
    text = f"wrote {nbytes:,} bytes to {where}" if nbytes is not None else f"wrote {where}"
    if where != "stdout" and os.path.isfile(where) and (nbytes is None or where.endswith(".gz")):
        text += f" ({os.path.getsize(where):,} bytes on disk)"
    return text
