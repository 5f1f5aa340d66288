"""Progress on stderr for long runs: stdout carries only the alignment.

The CLI installs a ``Progress`` for the run; any stage may report through
``current()`` without taking a parameter for it::

    with progress.current().stage("aligning", total=n_merges) as advance:
        for batch in levels:
            ...
            advance(len(batch))  # advance(n, description="...") also renames the bar

Live bars are drawn only when stderr is a terminal; ``--quiet`` silences
everything, including the one-line notes. A stage's start and end and each
``advance`` are checkpoints where a noted SIGINT or SIGTERM stops the run
(:func:`msa.interrupts.check`).

Outside the CLI (the Python API) nothing is printed: the reporter is a
:class:`LogReport`, whose notes are records of the ``msa`` logger, shown only
where the caller configures logging.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from contextvars import ContextVar
from typing import TYPE_CHECKING, Callable, Iterator

from msa.interrupts import check

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
        return not self.quiet and (self._console is not None or _may_be_terminal()) and self.console.is_terminal

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
    def stage(
        self, description: str, total: int | None = None, note: bool = True
    ) -> Iterator[Callable[..., None]]:
        """A task shown while the block runs; the block gets ``advance(steps)``.

        A finished stage leaves one line with its time where its bar was drawn,
        and with ``verbose`` also when stderr is a log file (no bar there);
        ``note=False`` leaves none (the caller says something better).
        """
        check()
        if self._live is None and not self.verbose:
            yield _ignore
            check()
            return
        start = time.perf_counter()
        live = self._live
        if live is None:
            yield _ignore
        else:
            task = live.add_task(description, total=total)

            def advance(steps: int = 1, description: str | None = None) -> None:
                check()
                # A new description (a run's bar over families) is drawn at once; plain steps at the refresh rate.
                live.update(task, advance=steps, description=description, refresh=description is not None)

            try:
                yield advance
            finally:
                live.remove_task(task)
        check()
        if note:
            self.note(f"{description} ({time.perf_counter() - start:.1f} s)")

    @contextlib.contextmanager
    def family(self) -> Iterator["Progress"]:
        """The ``current()`` reporter of one family of a many-family run (:mod:`msa.run`).

        It draws no bars of its own (the run's bar over families stays the only
        one) and shows the family's stage lines only with ``verbose``, printed
        through this console so that they land above the run's bar.
        """
        console = self.console if self.verbose else None
        child = Progress(quiet=not self.verbose, console=console, verbose=self.verbose)
        token = _current.set(child)
        try:
            yield child
        finally:
            _current.reset(token)

    def note(self, message: str) -> None:
        """One line on stderr unless quiet (printed plainly, without importing Rich, where
        stderr is no terminal and no console was made)."""
        if self.quiet:
            return
        if self._console is None and not _may_be_terminal():
            print(f"msa: {message}", file=sys.stderr, flush=True)
        else:
            self.console.print(f"msa: {message}", markup=False, soft_wrap=True)

    def error(self, message: str) -> None:
        """One ``msa: error:`` line on stderr, also when quiet; above the bars while they are drawn."""
        if self._live is not None:
            self.console.print(f"msa: error: {message}", markup=False, soft_wrap=True)
        else:
            print(f"msa: error: {message}", file=sys.stderr, flush=True)


class NoteRecorder(Progress):
    """A silent reporter that keeps its notes (``notes``), for work done in another process
    (msa._runtime.forked) whose notes the command prints."""

    def __init__(self) -> None:
        super().__init__(quiet=True)
        self.notes: list[str] = []

    def note(self, message: str) -> None:
        self.notes.append(message)


#: Where the Python API's notes go (INFO) and its stages' times (DEBUG): a library logs, the
#: caller decides what is shown (nothing unless it configures logging).
logger = logging.getLogger("msa")
logger.addHandler(logging.NullHandler())


class LogReport(Progress):
    """The reporter outside the CLI: notes and errors as records of :data:`logger`, each
    finished stage's time at DEBUG; nothing drawn or printed."""

    def __init__(self) -> None:
        super().__init__(quiet=True)

    @contextlib.contextmanager
    def stage(
        self, description: str, total: int | None = None, note: bool = True
    ) -> Iterator[Callable[..., None]]:
        check()
        start = time.perf_counter()
        yield _ignore
        check()
        if note:
            logger.debug("%s (%.1f s)", description, time.perf_counter() - start)

    @contextlib.contextmanager
    def family(self) -> Iterator["Progress"]:
        yield self

    def note(self, message: str) -> None:
        logger.info("%s", message)

    def error(self, message: str) -> None:
        logger.error("%s", message)


#: Environment variables with which Rich treats any stream as a terminal.
_FORCE_TERMINAL = ("FORCE_COLOR", "TTY_INTERACTIVE", "TTY_COMPATIBLE")


def _may_be_terminal() -> bool:
    """Whether Rich could see stderr as a terminal; when not, a run has no bars to draw and
    its lines need no Rich (~20 ms of imports)."""
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):
        tty = False
    return tty or any(os.environ.get(k) for k in _FORCE_TERMINAL)


def _ignore(steps: int = 1, description: str | None = None) -> None:
    """advance() when nothing is drawn: only the checkpoint."""
    check()


_current: ContextVar[Progress] = ContextVar("msa_progress", default=LogReport())


def current() -> Progress:
    """The reporter of the running command (outside the CLI, a :class:`LogReport`)."""
    return _current.get()
