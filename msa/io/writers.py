"""Clustal, Stockholm, PHYLIP, A2M and A3M written from the residues and their columns, a block
of lines at a time.

Every line of the first four is a head (a name column, a header), a slice
of a row and a newline, so NumPy lays out a block of lines at once: a
template line copied over the block, the names, then each residue put at its
place; no row matrix and no loop over residues. Where the heads have one
byte length (names in ASCII), the block is laid out in the output file's
own pages, reserved and mapped as the FASTA writer does; otherwise a block is
written line by line (``writelines``). The bytes are those Biopython 1.88's
``Bio.Align`` writers gave (whose per-residue rows made Clustal of 1,000 rows
take 72 s against 0.75 s for FASTA), except for Clustal's conservation line,
PHYLIP's name checks and relaxed variant, unique Stockholm names
(:func:`check_names`) and all-gap columns, which Biopython dropped.
"""
from __future__ import annotations

import contextlib
import mmap
import os
import re
from typing import TYPE_CHECKING, BinaryIO, Iterator, Sequence

import numpy as np

from msa.seqdb import _ranges

if TYPE_CHECKING:
    from msa.io.formats import Rows

_NL, _SPACE, _GAP, _DOT, _STAR = ord("\n"), ord(" "), ord("-"), ord("."), ord("*")
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
#: Set on the letters of insert columns (residues are ASCII) so that one byte table recodes both kinds.
INSERT_BIT = 0x80


def _case_table(insert_gap: int) -> np.ndarray:
    """byte -> its match-column form (upper case); byte | INSERT_BIT -> its insert-column form
    (lower case; a gap becomes ``insert_gap``)."""
    table = np.arange(256, dtype=np.uint8)
    table[ord("a") : ord("z") + 1] -= 32
    table[INSERT_BIT:] = np.arange(INSERT_BIT, dtype=np.uint8)
    table[INSERT_BIT + ord("A") : INSERT_BIT + ord("Z") + 1] += 32
    table[INSERT_BIT + _GAP] = insert_gap
    return table


#: A2M's and A3M's letters: upper case in match columns, lower case in inserts (A2M's insert
#: gaps are ``.``; A3M leaves them out).
A2M_CASE = _case_table(_DOT)


class _Sink:
    """Where a writer's bytes go, a block at a time: into the pages of the output file itself
    where it is a new regular file whose ``total`` bytes could be reserved (no copy through
    ``write``, and a full disk fails before any byte is written), else through ``out.write``."""

    def __init__(self, out: BinaryIO, total: int | None) -> None:
        from msa.io.fasta import _empty_file, _readable
        from msa.io.output import reserve

        self.out, self.total, self.at, self.fd = out, total, 0, None
        fd = _empty_file(out) if total else None
        if fd is not None and _readable(fd) and reserve(fd, 0, total):
            self.fd = fd

    @contextlib.contextmanager
    def block(self, size: int) -> Iterator[np.ndarray]:
        """``size`` bytes for the caller to fill; they are in the output when the block ends."""
        if self.fd is not None and size:
            base = self.at - self.at % mmap.ALLOCATIONGRANULARITY
            try:
                mapped = mmap.mmap(self.fd, self.at + size - base, offset=base)
            except OSError:
                if self.at:
                    raise
                self.fd = None  # cannot be mapped: written from the start, over the reserved space
            else:  # unmapped once the caller's views of it are gone
                yield np.frombuffer(mapped, dtype=np.uint8, count=size, offset=self.at - base)
                self.at += size
                return
        buf = np.empty(size, dtype=np.uint8)
        yield buf
        self.out.write(memoryview(buf))

    def write(self, data: bytes) -> None:
        with self.block(len(data)) as buf:
            buf[:] = np.frombuffer(data, dtype=np.uint8)

    def lines(self, parts: list) -> None:
        """Parts of lines of unequal length (never a mapped output: its size was not given)."""
        self.out.writelines(parts)

    def close(self) -> None:
        if self.fd is not None:
            os.lseek(self.fd, self.at, os.SEEK_SET)


class _NameColumn:
    """Lines that each start with a head (a name padded as the format wants, a header).

    A table of such lines is laid out for several blocks at once: a template
    block (heads, bodies of ``fill``, newlines, the block's ``tail``) copied
    over the table; the caller then fills the bodies. Heads of one byte length
    (names in ASCII) are in the table, laid out in the output itself
    (``_Sink.block``); heads of unequal length (A2M's headers, names in UTF-8)
    are written in between the table's lines.
    """

    def __init__(self, heads: Sequence[bytes]) -> None:
        lens = set(map(len, heads))
        self.heads = heads
        self.count = len(heads)
        self.uniform = len(lens) <= 1
        self.width = lens.pop() if len(lens) == 1 else 0  # 0: the heads are not in the table

    def size(self, columns: int, tail: bytes = b"") -> int:
        """Bytes of one block (exact where the heads are of one length)."""
        return self.count * (self.width + columns + 1) + len(tail)

    @contextlib.contextmanager
    def blocks(
        self, sink: _Sink, blocks: int, columns: int, tail: bytes = b"", fill: int = _GAP, template: np.ndarray | None = None
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(table, bodies)``: ``table`` is ``blocks`` blocks of these lines, flat per block;
        ``bodies`` its ``(blocks, lines, columns)`` view, all ``fill`` (or the row ``template``)
        for the caller to fill in. The lines go to ``sink`` when the block ends."""
        line = self.width + columns + 1
        size = self.count * line
        one = np.empty(size + len(tail), dtype=np.uint8)
        one[size:] = np.frombuffer(tail, dtype=np.uint8)
        lines = one[:size].reshape(self.count, line)
        if self.width:
            lines[:, : self.width] = np.frombuffer(b"".join(self.heads), np.uint8).reshape(self.count, self.width)
        lines[:, self.width : self.width + columns] = fill if template is None else template
        lines[:, -1] = _NL
        if self.uniform:
            with sink.block(blocks * len(one)) as buf:
                table = buf.reshape(blocks, len(one))
                table[:] = one
                yield table, table[:, :size].reshape(blocks, self.count, line)[:, :, self.width : self.width + columns]
            return
        table = np.empty((blocks, len(one)), dtype=np.uint8)
        table[:] = one
        yield table, table[:, :size].reshape(blocks, self.count, line)[:, :, self.width : self.width + columns]
        view = memoryview(table.reshape(-1))
        parts: list = []
        for start in range(0, table.size, len(one)):  # a block at a time, then its tail
            parts += [part for k, head in enumerate(self.heads)
                      for part in (head, view[start + k * line : start + (k + 1) * line])]
            parts.append(view[start + size : start + len(one)])
        sink.lines(parts)


def _encode(text: str) -> bytes:
    """Names and headers as they were read (surrogate escapes back to their bytes)."""
    return text.encode("utf-8", "surrogateescape")


def _residues(aligned: Rows, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(record - lo, column, letter) of every residue of records ``lo..hi``, record after record."""
    db = aligned.distinct
    if aligned.index is None:  # records are the sequences: one slice
        first, last = int(db.offsets[lo]), int(db.offsets[hi])
        record = np.repeat(np.arange(hi - lo), db.lengths[lo:hi])
        return record, aligned.columns[first:last], db.residues[first:last]
    ids = aligned.index[lo:hi]
    lengths = db.lengths[ids]
    at = _ranges(db.offsets[ids], lengths)
    return np.repeat(np.arange(hi - lo), lengths), aligned.columns[at], db.residues[at]


def _record_blocks(aligned: Rows, line: int) -> list[tuple[int, int]]:
    """Records ``lo..hi`` of about BLOCK_BYTES of lines of ``line`` bytes each."""
    n = len(aligned.names)
    step = max(1, BLOCK_BYTES // max(1, line))
    return [(lo, min(n, lo + step)) for lo in range(0, n, step)]


def _write_rows(sink: _Sink, aligned: Rows, heads: Sequence[bytes], template: np.ndarray | None = None,
                recode: np.ndarray | None = None) -> None:
    """Line ``i``: ``heads[i]``, row ``i``, a newline. Rows are ``template`` (default: gaps)
    with each residue at its column, through the byte table ``recode`` (with INSERT_BIT set
    in the columns where ``template`` holds a ``.``) if given."""
    width = aligned.width
    insert = None if template is None else np.where(template == _DOT, INSERT_BIT, 0).astype(np.uint8)
    for lo, hi in _record_blocks(aligned, width + 32):
        column = _NameColumn(heads[lo:hi])
        record, col, letter = _residues(aligned, lo, hi)
        if recode is not None:
            letter = recode[letter | insert[col]]
        with column.blocks(sink, 1, width, template=template) as (table, _):
            table.reshape(-1)[record * (column.width + width + 1) + column.width + col] = letter


def write_clustal(out: BinaryIO, aligned: Rows, names: Sequence[str], title: bytes, nucleotide: bool) -> None:
    """Clustal: the title line and two blank lines, then blocks of 50 columns, each a line per
    row (30 characters of name in a column of 36) and the conservation line, then a blank line.

    Every block holds every row, so each residue goes straight to its place in its block."""
    n, width = len(names), aligned.width
    record, col, letter = _residues(aligned, 0, n)
    heads = [_encode(name[:CLUSTAL_NAME].replace(" ", "_").ljust(CLUSTAL_NAME_COLUMN)) for name in names]
    column = _NameColumn(heads + [b" " * CLUSTAL_NAME_COLUMN])
    marks = _conservation(n, width, record, col, letter, nucleotide)
    full, rest = divmod(width, CLUSTAL_COLUMNS)
    total = len(title) + 3 + full * column.size(CLUSTAL_COLUMNS, b"\n") + (column.size(rest, b"\n") if rest else 0) + 1
    sink = _Sink(out, total if column.uniform else None)
    sink.write(title + b"\n\n\n")
    line = column.width + CLUSTAL_COLUMNS + 1
    block_bytes = column.size(CLUSTAL_COLUMNS, b"\n")
    block, within = np.divmod(col, CLUSTAL_COLUMNS)
    at = block * block_bytes + record * line + column.width + within  # each residue's place, from the first block
    key = record * (width + 1) + col  # ascending: record after record, columns in order
    starts = np.arange(n, dtype=np.int64) * (width + 1)
    step = max(1, BLOCK_BYTES // block_bytes)
    spans = [(b, min(full, b + step), CLUSTAL_COLUMNS) for b in range(0, full, step)]
    if rest:
        spans.append((full, full + 1, rest))
    for first, last, columns in spans:
        lo, hi = first * CLUSTAL_COLUMNS, first * CLUSTAL_COLUMNS + (last - first) * columns
        begin = np.searchsorted(key, starts + lo)
        inside = _ranges(begin, np.searchsorted(key, starts + hi) - begin)  # the residues in lo..hi
        where = at[inside] - first * block_bytes
        if columns != CLUSTAL_COLUMNS:  # the last, narrower block: shorter lines
            where -= record[inside] * (CLUSTAL_COLUMNS - columns)
        with column.blocks(sink, last - first, columns, b"\n") as (table, body):
            body[:, n] = marks[lo:hi].reshape(last - first, columns)
            table.reshape(-1)[where] = letter[inside]
    sink.write(b"\n")
    sink.close()


def _conservation(n: int, width: int, record: np.ndarray, col: np.ndarray, letter: np.ndarray,
                  nucleotide: bool) -> np.ndarray:
    """conservation_line of the rows these residues make, from a row matrix of only the
    columns where every record has a residue (the others get a space)."""
    marks = np.full(width, _SPACE, dtype=np.uint8)
    full = np.flatnonzero(np.bincount(col, minlength=width) == n)
    if n == 0 or len(full) == 0:
        return marks
    rank = np.full(width, -1, dtype=np.int64)
    rank[full] = np.arange(len(full))
    inside = rank[col] >= 0
    dense = np.empty((n, len(full)), dtype=np.uint8)
    dense[record[inside], rank[col[inside]]] = letter[inside]
    marks[full] = conservation_line(dense, nucleotide)
    return marks


def write_stockholm(out: BinaryIO, aligned: Rows, names: Sequence[str], rests: Sequence[str]) -> None:
    """Stockholm 1.0: the number of sequences (``#=GF SQ``), each description as ``#=GS name DE``,
    a line per row after a name column, ``//``."""
    width = max(map(len, names))
    start = max(width, 20) + 12
    top = b"".join([b"# STOCKHOLM 1.0\n", b"#=GF SQ   %d\n" % len(names)]
                   + [_encode(f"#=GS {name.ljust(width)}  DE {rest}\n") for name, rest in zip(names, rests) if rest])
    _write_lines(out, aligned, top, [_encode(name.ljust(start)) for name in names], b"//\n")


def write_phylip(out: BinaryIO, aligned: Rows, names: Sequence[str], relaxed: bool) -> None:
    """PHYLIP, sequential, a row per line: names (see phylip_names) cut and padded to 10 characters,
    or, relaxed, whole and padded to the longest plus one."""
    pad = max(map(len, names)) + 1 if relaxed else PHYLIP_NAME
    top = b"%d %d\n" % (len(names), aligned.width)
    _write_lines(out, aligned, top, [_encode(name.ljust(pad)) for name in names], b"")


def write_a2m(out: BinaryIO, aligned: Rows, names: Sequence[str], rests: Sequence[str], match: np.ndarray) -> None:
    """A2M: a header line and a line of residues per record; match columns (``match``) upper
    case with ``-`` gaps, insert columns lower case with ``.`` gaps."""
    heads = [_encode(f">{name} {rest}\n" if rest else f">{name}\n") for name, rest in zip(names, rests)]
    template = np.where(match, _GAP, _DOT).astype(np.uint8)
    _write_lines(out, aligned, b"", heads, b"", template, A2M_CASE)


def _write_lines(out: BinaryIO, aligned: Rows, top: bytes, heads: list[bytes], end: bytes,
                 template: np.ndarray | None = None, recode: np.ndarray | None = None) -> None:
    """``top``, a line per row (see _write_rows), ``end``."""
    lens = set(map(len, heads))
    total = len(top) + len(heads) * (lens.pop() + aligned.width + 1) + len(end) if len(lens) == 1 else None
    sink = _Sink(out, total)
    sink.write(top)
    _write_rows(sink, aligned, heads, template, recode)
    sink.write(end)
    sink.close()


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
    db = aligned.distinct
    weights = None if aligned.index is None else np.repeat(np.bincount(aligned.index, minlength=len(db)), db.lengths)
    occupied = np.bincount(aligned.columns, weights=weights, minlength=aligned.width)
    return 2 * occupied >= len(aligned.names)


def a3m_match_columns(aligned: Rows) -> np.ndarray:
    """A3M's match columns (bool, one per column): where the first row has a residue, or a ``*``."""
    match = np.zeros(aligned.width, dtype=bool)
    match[aligned.record_columns(0)] = True
    match[aligned.columns[aligned.distinct.residues == _STAR]] = True
    return match


def write_a3m(out: BinaryIO, aligned: Rows) -> None:
    """Write ``aligned`` as A3M (see msa.io.formats): a header and a line per record, the
    match columns' residues and gaps and the insert columns' residues.

    A residue's place in its line is the match columns before its column plus
    the record's insert residues before it: computed for all residues at once."""
    from msa.io.fasta import header_bytes

    match = a3m_match_columns(aligned)
    matches = int(match.sum())
    match_before = np.cumsum(match) - match
    for lo, hi in _record_blocks(aligned, matches + 32):
        record, col, letter = _residues(aligned, lo, hi)
        is_match = match[col]
        lengths = np.bincount(record, minlength=hi - lo)
        first = np.cumsum(lengths) - lengths  # each record's first residue
        in_match = np.cumsum(is_match) - is_match  # match residues before each residue, over all records
        inserts_before = np.arange(len(record)) - first[record] - (in_match - in_match[first][record])
        line = matches + lengths - np.bincount(record, weights=is_match, minlength=hi - lo).astype(np.int64) + 1
        line_start = np.cumsum(line) - line
        text = np.full(int(line.sum()), _GAP, dtype=np.uint8)
        text[line_start + line - 1] = _NL
        state = np.where(is_match, 0, INSERT_BIT).astype(np.uint8)
        text[line_start[record] + match_before[col] + inserts_before] = A2M_CASE[letter | state]
        view = memoryview(text)
        ends = (line_start + line).tolist()
        starts = line_start.tolist()
        out.writelines([part for head, a, b in zip(header_bytes(aligned.descriptions[lo:hi]), starts, ends)
                        for part in (head, view[a:b])])
