"""Clustal, Stockholm, PHYLIP and A2M written from the row array, a block of lines at a time.

Every line of these formats is a name column, a slice of the rows and a
newline, so NumPy lays out a whole block of lines at once and one ``write``
sends it: the cost is that of the output bytes (Biopython's writers built
each row a residue at a time: Clustal of 1,000 rows took 72 s against 0.75 s
for FASTA). The bytes are those Biopython 1.88's ``Bio.Align`` writers gave,
with these additions: Clustal's conservation line, PHYLIP's name checks and
its relaxed variant, and unique names in Stockholm (see :func:`check_names`).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, BinaryIO, Callable, Sequence

import numpy as np

if TYPE_CHECKING:
    from msa.io.formats import Rows

_NL, _SPACE, _GAP, _DOT = ord("\n"), ord(" "), ord("-"), ord(".")
#: About this many output bytes are laid out at a time.
BLOCK_BYTES = 1 << 24
#: Clustal: columns per block; characters of a name kept, and the name column's width (Biopython's layout).
CLUSTAL_COLUMNS, CLUSTAL_NAME, CLUSTAL_NAME_COLUMN = 50, 30, 36
#: Strict PHYLIP's name width.
PHYLIP_NAME = 10
#: Clustal's conservation groups: ``:`` where a column's residues all fall in a strong group,
#: ``.`` in a weak one (ClustalW's and Clustal Omega's lists).
STRONG_GROUPS = ("STA", "NEQK", "NHQK", "NDEQ", "QHRK", "MILV", "MILF", "HY", "FYW")
WEAK_GROUPS = ("CSA", "ATV", "SAG", "STNK", "STPA", "SGND", "SNDEQK", "NDEQHK", "NEQHRK", "FVLIM", "HFY")


def _kinds() -> np.ndarray:
    """byte -> a kind of residue, for the bit ``1 << kind``: A-Z in either case 0-25, ``*`` 26, anything else 27."""
    kinds = np.full(256, 27, dtype=np.uint8)
    for k in range(26):
        kinds[ord("A") + k] = kinds[ord("a") + k] = k
    kinds[ord("*")] = 26
    return kinds


_KINDS = _kinds()
_OTHER_BIT = np.uint32(1 << 27)


def _group_bits(groups: Sequence[str]) -> np.ndarray:
    return np.array([sum(1 << int(k) for k in set(_KINDS[np.frombuffer(g.encode(), np.uint8)])) for g in groups],
                    dtype=np.uint32)


_STRONG, _WEAK = _group_bits(STRONG_GROUPS), _group_bits(WEAK_GROUPS)


def conservation_line(rows: np.ndarray, nucleotide: bool = False) -> np.ndarray:
    """Clustal's conservation line of ``rows`` (uint8, one byte per column): ``*`` where every
    row has the same residue (case ignored), ``:`` where they all fall in one strong group,
    ``.`` in one weak group, a space otherwise and in every column with a gap. Nucleotides
    get only ``*``, as Clustal Omega writes them.

    The kinds of residue in a column are the bits of one OR over its rows, made only for the
    columns without a gap (few, in a large alignment)."""
    from msa.alphabet import lookup

    n, width = rows.shape
    line = np.full(width, _SPACE, dtype=np.uint8)
    if n == 0:
        return line
    full = np.flatnonzero(~((rows == _GAP) | (rows == _DOT)).any(axis=0))
    present = np.zeros(len(full), dtype=np.uint32)  # the kinds of residue in each gap-free column
    step = max(1, BLOCK_BYTES // (4 * max(1, len(full))))
    for lo in range(0, n, step):
        kinds = lookup(_KINDS, np.ascontiguousarray(rows[lo : lo + step, full]))
        present |= np.bitwise_or.reduce(np.left_shift(np.uint32(1), kinds, dtype=np.uint32), axis=0)
    marks = np.full(len(full), _SPACE, dtype=np.uint8)
    if not nucleotide:
        for groups, mark in ((_WEAK, "."), (_STRONG, ":")):  # strong over weak
            marks[((present[:, None] & ~groups[None, :]) == 0).any(axis=1)] = ord(mark)
    marks[((present & (present - 1)) == 0) & (present != _OTHER_BIT)] = ord("*")  # one kind of residue
    line[full] = marks
    return line


class _NameColumn:
    """Lines that start with a head of bytes each (a name, padded as the format wants).

    A table of such lines is laid out for several blocks at once, heads and
    newlines in place, the caller fills the bodies; heads of unequal byte
    length (names in UTF-8) are padded on the left in the table and the
    padding dropped by ``text``.
    """

    def __init__(self, heads: Sequence[bytes]) -> None:
        lens = np.fromiter(map(len, heads), dtype=np.int64, count=len(heads))
        self.count = len(heads)
        self.width = int(lens.max(initial=0))
        self.joined = np.frombuffer(b"".join(heads), dtype=np.uint8)
        self.fill = None if np.all(lens == self.width) else np.arange(self.width)[None, :] >= (self.width - lens)[:, None]

    def layout(self, blocks: int, columns: int, tail: bytes = b"") -> tuple[np.ndarray, np.ndarray]:
        """A table of ``blocks`` blocks of these lines, each body ``columns`` bytes and each block
        ended by ``tail``; and the ``(blocks, lines, columns)`` view of the bodies to fill."""
        line = self.width + columns + 1
        size = self.count * line
        table = np.empty((blocks, size + len(tail)), dtype=np.uint8)
        table[:, size:] = np.frombuffer(tail, dtype=np.uint8)
        lines = table[:, :size].reshape(blocks, self.count, line)
        if self.fill is None:
            lines[:, :, : self.width] = self.joined.reshape(self.count, self.width)
        else:
            lines[:, :, : self.width][:, self.fill] = self.joined
        lines[:, :, -1] = _NL
        return table, lines[:, :, self.width : self.width + columns]

    def text(self, table: np.ndarray, columns: int) -> np.ndarray:
        """The bytes of a table laid out for bodies of ``columns`` bytes, without the padding of shorter heads."""
        if self.fill is None:
            return table.reshape(-1)
        keep = np.ones(table.shape[1], dtype=bool)
        keep[: self.count * (self.width + columns + 1)].reshape(self.count, -1)[:, : self.width] = self.fill
        return table[:, keep].reshape(-1)


def _encode(text: str) -> bytes:
    """Names and headers as they were read (surrogate escapes back to their bytes)."""
    return text.encode("utf-8", "surrogateescape")


def _write_rows(
    out: BinaryIO, aligned: Rows, heads: Sequence[bytes], recode: Callable[[np.ndarray], np.ndarray] | None = None
) -> None:
    """Line ``i``: ``heads[i]``, row ``i`` (``recode`` of it, if given), a newline; a block of
    rows at a time, so the whole row matrix never exists."""
    n, width = len(heads), aligned.width
    step = max(1, BLOCK_BYTES // max(1, width + 16))
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        column = _NameColumn(heads[lo:hi])
        table, body = column.layout(1, width)
        rows = aligned.rows_of(lo, hi)
        body[0] = rows if recode is None else recode(rows)
        out.write(memoryview(column.text(table, width)))


def write_clustal(out: BinaryIO, aligned: Rows, names: Sequence[str], title: bytes, nucleotide: bool) -> None:
    """Clustal: the title line and two blank lines, then blocks of 50 columns, each a line per
    row (30 characters of name in a column of 36) and the conservation line, then a blank line."""
    rows = aligned.rows  # every block holds every row
    n, width = rows.shape
    heads = [_encode(name[:CLUSTAL_NAME].replace(" ", "_").ljust(CLUSTAL_NAME_COLUMN)) for name in names]
    column = _NameColumn(heads + [b" " * CLUSTAL_NAME_COLUMN])
    marks = conservation_line(rows, nucleotide)
    out.write(title + b"\n\n\n")
    full, rest = divmod(width, CLUSTAL_COLUMNS)
    step = max(1, BLOCK_BYTES // ((n + 1) * (column.width + CLUSTAL_COLUMNS + 1)))
    spans = [(b, min(full, b + step), CLUSTAL_COLUMNS) for b in range(0, full, step)]
    if rest:
        spans.append((full, full + 1, rest))
    for first, last, columns in spans:
        lo, hi = first * CLUSTAL_COLUMNS, first * CLUSTAL_COLUMNS + (last - first) * columns
        table, body = column.layout(last - first, columns, b"\n")
        body[:, :n] = rows[:, lo:hi].reshape(n, last - first, columns).transpose(1, 0, 2)
        body[:, n] = marks[lo:hi].reshape(last - first, columns)
        out.write(memoryview(column.text(table, columns)))
    out.write(b"\n")


def write_stockholm(out: BinaryIO, aligned: Rows, names: Sequence[str], rests: Sequence[str]) -> None:
    """Stockholm 1.0: the number of sequences (``#=GF SQ``), each description as ``#=GS name DE``,
    a line per row after a name column, ``//``."""
    width = max(map(len, names))
    start = max(width, 20) + 12
    parts = [b"# STOCKHOLM 1.0\n", b"#=GF SQ   %d\n" % len(names)]
    parts += [_encode(f"#=GS {name.ljust(width)}  DE {rest}\n") for name, rest in zip(names, rests) if rest]
    out.writelines(parts)
    _write_rows(out, aligned, [_encode(name.ljust(start)) for name in names])
    out.write(b"//\n")


def write_phylip(out: BinaryIO, aligned: Rows, names: Sequence[str], relaxed: bool) -> None:
    """PHYLIP, sequential, a row per line: names (see phylip_names) cut and padded to 10 characters,
    or, relaxed, whole and padded to the longest plus one."""
    pad = max(map(len, names)) + 1 if relaxed else PHYLIP_NAME
    out.write(b"%d %d\n" % (len(names), aligned.width))
    _write_rows(out, aligned, [_encode(name.ljust(pad)) for name in names])


def write_a2m(out: BinaryIO, aligned: Rows, names: Sequence[str], rests: Sequence[str], match: np.ndarray) -> None:
    """A2M: a header line and a line of residues per record; match columns (``match``) upper
    case with ``-`` gaps, insert columns lower case with ``.`` gaps."""
    heads = [_encode(f">{name} {rest}\n" if rest else f">{name}\n") for name, rest in zip(names, rests)]
    _write_rows(out, aligned, heads, lambda rows: np.where(match, _UPPER[rows], np.where(rows == _GAP, _DOT, _LOWER[rows])))


_UPPER = np.arange(256, dtype=np.uint8)
_UPPER[ord("a") : ord("z") + 1] -= 32
_LOWER = np.arange(256, dtype=np.uint8)
_LOWER[ord("A") : ord("Z") + 1] += 32


def rest_of_header(name: str, header: str) -> str:
    """The header after its name: what Stockholm's ``DE`` and A2M's header carry after the name."""
    return header[len(name) :].strip() if header.startswith(name) else header.strip()


def phylip_names(names: Sequence[str], relaxed: bool) -> list[str]:
    """Names as PHYLIP holds them (Biopython's rules): outer blanks and ``[](),`` dropped,
    ``:`` and ``;`` made ``|`` (they would end a name in a Newick tree); strict PHYLIP keeps
    10 characters."""
    table = str.maketrans({"[": None, "]": None, "(": None, ")": None, ",": None, ":": "|", ";": "|"})
    cut = None if relaxed else PHYLIP_NAME
    return [name.strip().translate(table)[:cut] for name in names]


def check_names(names: Sequence[str], fmt: str) -> list[str]:
    """The names ``fmt`` writes for ``names``, or a one-line ValueError where it cannot hold them.

    PHYLIP refuses distinct names that become one (strict PHYLIP cuts them to
    10 characters: the message offers ``--format phylip-relaxed``), and
    relaxed PHYLIP names with blanks (its readers split the name at the first
    one). Stockholm names the second and later copies of a name ``name/2``,
    ``name/3``...: its readers take the lines of one name for pieces of one
    sequence (HMMER and Biopython join them), and ``/`` is where Stockholm
    names already carry a part of their sequence (Pfam's ``name/start-end``).
    """
    if not names and fmt in ("clustal", "stockholm", "phylip", "phylip-relaxed"):
        raise ValueError(f"{fmt} cannot hold an alignment without sequences")
    if fmt in ("phylip", "phylip-relaxed"):
        relaxed = fmt == "phylip-relaxed"
        written = phylip_names(names, relaxed)
        if relaxed and (bad := _with_blank(written)) is not None:
            raise ValueError(
                f"relaxed PHYLIP cannot hold the name {names[bad]!r}: its readers end a name at a blank "
                "(strict --format phylip keeps 10 characters, blanks included)"
            )
        if len(set(written)) != len(set(names)):
            first: dict[str, str] = {}
            for name, new in zip(names, written):
                if first.setdefault(new, name) != name:
                    hint = "; --format phylip-relaxed keeps names whole" if not relaxed else ""
                    raise ValueError(
                        f"{'strict ' if not relaxed else ''}PHYLIP would write {first[new]!r} and {name!r} "
                        f"both as {new!r}{hint}"
                    )
        return written
    if fmt == "stockholm":
        return unique_names(names)
    return list(names)


def _with_blank(names: Sequence[str]) -> int | None:
    """The index of the first name that is empty or holds a blank (a character ``str.split`` splits at)."""
    if all(names) and not re.search(r"\s", "".join(names)):
        return None
    return next(i for i, name in enumerate(names) if not name or re.search(r"\s", name))


def unique_names(names: Sequence[str]) -> list[str]:
    """``names`` with the second and later copies of a name suffixed ``/2``, ``/3``... (the next
    number not already a name)."""
    if len(set(names)) == len(names):
        return list(names)
    taken = set(names)
    seen: dict[str, int] = {}
    out = []
    for name in names:
        k = seen.get(name, 0) + 1
        seen[name] = k
        if k > 1:
            while f"{name}/{k}" in taken:
                k += 1
            seen[name] = k
            taken.add(name := f"{name}/{k}")
        out.append(name)
    return out


def a2m_match_columns(aligned: Rows) -> np.ndarray:
    """A2M's match columns (bool, one per column): where at least half the rows have a residue.

    A2M marks insert columns by lower case, so unlike the other formats it
    changes the case of residues: upper in match columns, lower in inserts
    (the rule of HMMER's and HH-suite's ``--symfrac 0.5`` / ``-M 50``).
    """
    n, width = len(aligned.names), aligned.width
    occupied = np.zeros(width, dtype=np.int64)
    step = max(1, BLOCK_BYTES // max(1, width))
    for lo in range(0, n, step):
        occupied += np.count_nonzero(aligned.rows_of(lo, min(n, lo + step)) != _GAP, axis=0)
    return 2 * occupied >= n
