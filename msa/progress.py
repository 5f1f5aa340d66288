"""Progress on stderr for long runs: stdout carries only the alignment.

The CLI installs a ``Progress`` for the run; any stage may report through
``current()`` without taking a parameter for it::

    with progress.current().stage("aligning", total=n_merges) as advance:
        for batch in levels:
            ...
            advance(len(batch))

Live bars are drawn only when stderr is a terminal; ``--quiet`` silences
everything, including the one-line notes.
"""
from __future__ import annotations

import contextlib
import time
from contextvars import ContextVar
from typing import TYPE_CHECKING, Callable, Iterator

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress as RichProgress


class Progress:
    """Stage spinners and bars, and short notes, on stderr.

    Rich is imported only when something is shown: a quiet run never pays
    for it (about 40 ms of every ``msa align -q``).
    """

    def __init__(self, quiet: bool = True, console: Console | None = None, verbose: bool = False) -> None:
        self.quiet = quiet
        self.verbose = verbose and not quiet
        self._console = console
        self._live: RichProgress | None = None

    @property
    def console(self) -> Console:
        """The stderr console, made on first use."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=True, highlight=False)
        return self._console

    @property
    def live(self) -> bool:
        """Whether bars are drawn (a terminal on stderr and not quiet)."""
        return not self.quiet and self.console.is_terminal

    @contextlib.contextmanager
    def running(self) -> Iterator["Progress"]:
        """Draw bars while the block runs, and make this the ``current()`` reporter."""
        token = _current.set(self)
        try:
            if self.live:
                from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn
                from rich.progress import Progress as RichProgress
                from rich.progress import TimeElapsedColumn

                with RichProgress(
                    SpinnerColumn(),
                    TextColumn("{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                    console=self.console,
                    transient=True,
                ) as live:
                    self._live = live
                    yield self
            else:
                yield self
        finally:
            self._live = None
            _current.reset(token)

    @contextlib.contextmanager
    def stage(self, description: str, total: int | None = None) -> Iterator[Callable[[int], None]]:
        """A task shown while the block runs; the block gets ``advance(steps)``.

        A finished stage leaves one line with its time where its bar was drawn,
        and with ``verbose`` also when stderr is a log file (no bar there).
        """
        if self._live is None and not self.verbose:
            yield _ignore
            return
        start = time.perf_counter()
        live = self._live
        if live is None:
            yield _ignore
        else:
            task = live.add_task(description, total=total)
            try:
                yield lambda steps=1: live.advance(task, steps)
            finally:
                live.remove_task(task)
        self.note(f"{description} ({time.perf_counter() - start:.1f} s)")

    def note(self, message: str) -> None:
        """One line on stderr unless quiet."""
        if not self.quiet:
            self.console.print(f"msa: {message}", markup=False, soft_wrap=True)


def _ignore(steps: int = 1) -> None:
    """advance() when nothing is drawn."""


_current: ContextVar[Progress] = ContextVar("msa_progress", default=Progress(quiet=True))


def current() -> Progress:
    """The reporter of the running command (a silent one outside the CLI)."""
    return _current.get()
