"""What every command shares: one-line errors and interruptions, and its reports."""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator, NoReturn

import typer

from msa import interrupts
from msa._runtime import startup
from msa.backends import BackendUnavailable, DeviceMemoryError
from msa.run.results import one_line  # here, not in the error path: an error handler imports nothing


def _plain(value: object) -> object:
    """JSON for NumPy scalars in the score dict."""
    item = getattr(value, "item", None)
    if item is None:
        raise TypeError(f"cannot write {type(value).__name__} as JSON")
    return item()


@contextlib.contextmanager
def _errors() -> Iterator[None]:
    """Expected failures as one line on stderr and a non-zero exit, never a traceback.

    SIGINT and SIGTERM are noted meanwhile and raise msa.interrupts.Interrupted at the run's
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
        except (BackendUnavailable, ValueError, OSError, EOFError) as exc:  # msa.io's InputError is a ValueError
            _fail(_message(exc))
        except MemoryError as exc:  # CuPy's OutOfMemoryError outside the pieces that catch it
            device = DeviceMemoryError.from_exception(exc)
            _fail(str(device) if device is not None else f"out of memory ({_message(exc)})")
        except (ImportError, AttributeError) as exc:  # a module that cannot load (no memory to map it, a
            # broken install), or one a failed load on the start's thread left half made
            if isinstance(exc, AttributeError) and startup.import_failure is None:
                raise  # a bug, with its traceback
            cause = startup.import_failure or exc  # the first failure, where the start's thread met it
            reason = "out of memory" if isinstance(cause, MemoryError) else _message(cause)
            name = exc.name if isinstance(exc, ImportError) else getattr(getattr(exc, "obj", None), "__name__", None)
            _fail(f"cannot load {name or 'a module'}: {reason}")
        except KeyboardInterrupt as exc:
            _echo_error("msa: interrupted")
            raise typer.Exit(getattr(exc, "exit_status", 130)) from None


def _fail(message: str) -> NoReturn:
    """The one error line, then exit 1."""
    interrupts.stopping()  # a signal now would only cut the line short
    _echo_error(f"msa: error: {message}")
    raise typer.Exit(1) from None


def _echo_error(line: str) -> None:
    """``line`` on stderr, if there is one (``2>&-`` leaves only the exit status)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _message(exc: BaseException) -> str:
    """One line, with the file name first for OS errors, control characters escaped."""
    return one_line(exc)


def _output_note(output: str | None, nbytes: int | None) -> str:
    """``-v``'s line on the output's size."""
    where = "stdout" if output is None or output == "-" else output
    text = f"wrote {nbytes:,} bytes to {where}" if nbytes is not None else f"wrote {where}"
    if where != "stdout" and os.path.isfile(where) and (nbytes is None or where.endswith(".gz")):
        text += f" ({os.path.getsize(where):,} bytes on disk)"
    return text
