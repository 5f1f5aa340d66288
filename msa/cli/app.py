"""The Typer application and the process-wide settings of a command run."""
from __future__ import annotations

import sys
from typing import Annotated

import typer

from msa import __version__
from msa._runtime.collector import resume
from msa.run.results import one_line

try:  # typer 0.22 and later carry their own copy of click
    from typer._click import exceptions as click_errors
except ImportError:
    from click import exceptions as click_errors


app = typer.Typer(
    name="msa",
    help="Multiple sequence alignment of large protein and nucleotide families: FAMSA's exact "
    "single-linkage guide tree over LCS distances (PartTree above --mst-tree-max sequences), then "
    "batched profile alignment on the GPU or the CPU, both giving the same bytes. Each command runs "
    "in its own process and leaves nothing running.",
    epilog="Exit status: 0 success; 1 failure (one 'msa: error:' line on stderr); 2 usage error (a "
    "command line that does not parse); "
    "130 or 143 interrupted by SIGINT or SIGTERM. Every command reads gzip input.",
    context_settings={"help_option_names": ["-h", "--help"]},  # every command inherits -h
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)


def main() -> None:
    """Entry point of ``python -m msa``. Where the first argument names a command, only that
    command's options are built (Typer converts every registered command's parameters before
    it parses: 4 ms of a 0.3 s run on the 2-core dev machine); otherwise, e.g. ``msa --help``,
    all of them."""
    command = sys.argv[1] if len(sys.argv) > 1 else None
    chosen = [c for c in app.registered_commands if _command_name(c) == command]
    if chosen:
        app.registered_commands = chosen
    try:
        status = app(prog_name="msa", standalone_mode=False)  # click's errors come here, not to its box
    except getattr(click_errors, "NoArgsIsHelpError", ()) as exc:  # `msa` alone: the help, as click prints it
        exc.show()
        status = exc.exit_code
    except click_errors.ClickException as exc:
        status = _usage_error(exc)
    except typer.Abort:  # EOF at a prompt (msa has none)
        status = 1
    sys.exit(status if isinstance(status, int) else 0)


def _usage_error(exc: click_errors.ClickException) -> int:
    """A usage error (an unknown option, a bad value, a missing argument) as one line on stderr,
    naming the help to read; its exit status (2, the convention of click and GNU tools)."""
    ctx = getattr(exc, "ctx", None)
    hint = f" (see '{ctx.command_path} -h')" if ctx is not None else ""
    sys.stderr.write(f"msa: error: {one_line(exc.format_message()).rstrip('.')}{hint}\n")
    return exc.exit_code


def _command_name(info: typer.models.CommandInfo) -> str:
    """The name a registered command is called by (Typer's own rule)."""
    return info.name or typer.main.get_command_name(info.callback.__name__)


def _print_version(value: bool) -> None:
    if value:
        print(f"msa {__version__}")
        raise typer.Exit()


@app.callback()
def _short_lived_process(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print msa's version and exit.")
    ] = False,
) -> None:
    """The command line is parsed: the collector runs again (paused while the process started)."""
    resume()
