"""What a run reports: each family's result, the run's summary, errors as one line."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Status = Literal["done", "skipped", "failed"]


@dataclass(frozen=True)
class FamilyResult:
    """What became of one family. ``error`` is a one-line message naming the input."""

    input: str
    output: str
    status: Status
    error: str | None = None
    sequences: int = 0
    residues: int = 0
    width: int = 0
    seconds: float = 0.0
    seq_type: str = ""


@dataclass(frozen=True)
class RunSummary:
    """Every family's result, in input order, and the run's wall time."""

    results: tuple[FamilyResult, ...]
    seconds: float = 0.0

    def _with(self, status: Status) -> list[FamilyResult]:
        return [r for r in self.results if r.status == status]

    @property
    def done(self) -> list[FamilyResult]:
        return self._with("done")

    @property
    def skipped(self) -> list[FamilyResult]:
        return self._with("skipped")

    @property
    def failed(self) -> list[FamilyResult]:
        return self._with("failed")

    @property
    def ok(self) -> bool:
        """No family failed."""
        return not self.failed


def one_line(exc: BaseException | str) -> str:
    """An error (or a name) as one line, with the file name first for OS errors; control
    characters escaped (a file name with a newline or an escape sequence prints as ``\\n``,
    ``\\x1b``), odd bytes of names as ``\\xff``."""
    if isinstance(exc, str):
        text = exc
    elif isinstance(exc, OSError) and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(_CONTROL.sub(_escaped, text.strip()).split())


#: What one_line escapes: C0 and C1 control characters, DEL, and bytes kept by surrogateescape.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\udc80-\udcff]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code - 0xDC00:02x}" if code >= 0xDC80 else repr(match[0])[1:-1]


def family_error(input: str, exc: BaseException) -> str:
    """A family's error as one line that names its input."""
    text, name = one_line(exc), one_line(input)
    return text if text.startswith(name) else f"{name}: {text}"


def count(n: int) -> str:
    """A number of residues for the progress bar (``1.2 M``)."""
    for scale, unit in ((10**9, "G"), (10**6, "M"), (10**3, "k")):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return str(n)
