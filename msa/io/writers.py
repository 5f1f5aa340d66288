"""Clustal, Stockholm, PHYLIP, A2M and A3M written from the residues and their columns, never
from a row matrix and never a residue at a time.

Stockholm, PHYLIP and A2M have a line per record, a head (a padded name, a
header) and the whole row: records laid out as FASTA's are, by
``AlignedRows.fill`` on every thread, with one unwrapped row each. Clustal
interleaves blocks of 50 columns: the rows are laid out wrapped at 50 the
same way, and NumPy copies their lines, block after block, into a template
of names and conservation lines. A3M's rows differ in length: each
residue's place is computed from the match columns and the inserts before it.

The bytes are those Biopython 1.88's ``Bio.Align`` writers gave (whose
per-residue rows made Clustal of 1,000 rows take 72 s against 0.75 s for
FASTA), except for Clustal's conservation line, PHYLIP's name checks and
relaxed variant, unique Stockholm names (:func:`check_names`), and all-gap
columns, which Biopython dropped.
"""
from __future__ import annotations

import re
from typing import BinaryIO, Protocol, Sequence

import numpy as np

from msa.alphabet import lookup
from msa.io.fasta import header_bytes
from msa.seqdb import SeqDB, _ranges


class Rows(Protocol):
    """What a writer needs: ``msa.alignment.AlignedRows`` has it. ``place`` puts the residues
    of a block of records into wrapped rows, so FASTA is written a block at a time; ``fill``
    lays out whole records (a head, then a row template with the residues in place)."""

    names: list[str]
    descriptions: list[str]
    width: int
    distinct: SeqDB  # the residues, and their columns (the rows' sequences are distinct[index])
    columns: np.ndarray
    index: np.ndarray | None

    def place(self, flat: np.ndarray, line: int, width: int, lo: int, hi: int, clear: bool = False) -> None: ...

    def fill(self, out: np.ndarray, rec_off: np.ndarray, heads: np.ndarray, head_off: np.ndarray,
             template: np.ndarray, width: int, lo: int, hi: int, backend=None) -> None: ...

    def record_columns(self, i: int) -> np.ndarray: ...


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


class _Lines:
    """Blocks of lines that each start with a head (a padded name), then ``columns`` bytes of
    gaps and a newline; a block ends with ``tail``. Laid out in one reused buffer.

    A block is a template copied over the buffer; the caller then fills the
    bodies. Heads of one byte length (names in ASCII) are
    part of the template; heads of unequal length (names in UTF-8) are joined
    in between the lines when the block is written.
    """

    def __init__(self, heads: Sequence[bytes], columns: int, tail: bytes = b"") -> None:
        lens = set(map(len, heads))
        self.heads = heads
        self.width = lens.pop() if len(lens) == 1 else 0  # 0: the heads are not in the table
        self.line = self.width + columns + 1
        self.size = len(heads) * self.line  # of one block's lines, without the tail
        one = np.empty(self.size + len(tail), dtype=np.uint8)
        one[self.size :] = np.frombuffer(tail, dtype=np.uint8)
        lines = one[: self.size].reshape(len(heads), self.line)
        if self.width:
            lines[:, : self.width] = np.frombuffer(b"".join(heads), np.uint8).reshape(len(heads), self.width)
        lines[:, self.width : -1] = _GAP
        lines[:, -1] = _NL
        self.one = one
        self.buffer = np.empty(0, dtype=np.uint8)

    def block(self, blocks: int = 1) -> np.ndarray:
        """``blocks`` copies of the template, flat (``blocks * len(self.one)`` bytes of a reused buffer)."""
        size = blocks * len(self.one)
        if len(self.buffer) < size:
            self.buffer = np.empty(size, dtype=np.uint8)
        table = self.buffer[:size]
        table.reshape(blocks, len(self.one))[:] = self.one
        return table

    def write(self, out: BinaryIO, table: np.ndarray) -> None:
        """The laid-out ``table`` (from ``block``) to ``out``, heads and all."""
        if self.width or not self.heads:
            out.write(memoryview(table))
            return
        view, step = memoryview(table), len(self.one)
        parts: list = []
        for start in range(0, len(table), step):  # a block at a time, then its tail
            at = range(start, start + self.size, self.line)
            parts += [part for head, k in zip(self.heads, at) for part in (head, view[k : k + self.line])]
            parts.append(view[start + self.size : start + step])
        out.write(b"".join(parts))  # one write: writelines would call OutputWriter.write per part


def _encode(text: str) -> bytes:
    """Names and headers as they were read (surrogate escapes back to their bytes)."""
    return text.encode("utf-8", "surrogateescape")


def _residues(aligned: Rows, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(residues of each record, column, letter) of every residue of records ``lo..hi``, record after record."""
    db = aligned.distinct
    if aligned.index is None:  # records are the sequences: one slice
        first, last = int(db.offsets[lo]), int(db.offsets[hi])
        return db.lengths[lo:hi], aligned.columns[first:last], db.residues[first:last]
    ids = aligned.index[lo:hi]
    lengths = db.lengths[ids]
    at = _ranges(db.offsets[ids], lengths)
    return lengths, aligned.columns[at], db.residues[at]


def _write_rows(out: BinaryIO, aligned: Rows, heads: Sequence[bytes], backend=None, template: np.ndarray | None = None,
                recode: np.ndarray | None = None) -> None:
    """Line ``i``: ``heads[i]``, row ``i``, a newline; a buffer of records at a time.

    Rows are ``template`` (default: gaps) with each residue at its column,
    through the byte table ``recode`` (with INSERT_BIT set in the columns
    where ``template`` holds a ``.``) if given. The records are laid out as
    FASTA's are, by ``aligned.fill`` on ``backend`` (default: the CPU's threads),
    a record being a head and one unwrapped row."""
    from dataclasses import replace

    n, width = len(heads), aligned.width
    row = np.full(width + 1, _NL, dtype=np.uint8)
    row[:-1] = _GAP if template is None else template
    if recode is not None:
        db = aligned.distinct
        insert = np.where(row[:-1] == _DOT, INSERT_BIT, 0).astype(np.uint8)
        aligned = replace(aligned, distinct=replace(db, residues=lookup(recode, db.residues | insert[aligned.columns])))
    head_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, heads), dtype=np.int64, count=n), out=head_off[1:])
    head_buf = np.frombuffer(b"".join(heads), dtype=np.uint8)
    ends = head_off[1:] + np.arange(1, n + 1) * (width + 1)  # each record's end
    buffer = np.empty(0, dtype=np.uint8)
    lo = 0
    while lo < n:
        start = int(ends[lo - 1]) if lo else 0
        hi = max(lo + 1, int(np.searchsorted(ends, start + BLOCK_BYTES, side="right")))
        size = int(ends[hi - 1]) - start
        if len(buffer) < size:
            buffer = np.empty(size, dtype=np.uint8)
        rec_off = head_off[lo:hi] + np.arange(lo, hi) * (width + 1) - start
        aligned.fill(buffer, rec_off, head_buf, head_off[lo : hi + 1], row, width, lo, hi, backend)
        out.write(memoryview(buffer[:size]))
        lo = hi


def write_clustal(out: BinaryIO, aligned: Rows, names: Sequence[str], title: bytes, nucleotide: bool,
                  backend=None) -> None:
    """Clustal: the title line and two blank lines, then blocks of 50 columns, each a line per
    row (30 characters of name in a column of 36) and the conservation line, then a blank line.

    The rows are first laid out as FASTA's records, wrapped at 50 columns and without
    headers, by ``aligned.fill`` on ``backend`` (default: the CPU's threads); Clustal's
    blocks are those lines, block after block, after the names."""
    n, width = len(names), aligned.width
    full, rest = divmod(width, CLUSTAL_COLUMNS)
    line = CLUSTAL_COLUMNS + 1
    size = full * line + (rest + 1 if rest else 0)  # a record: its lines of 50 columns and the last
    template = np.full(size, _GAP, dtype=np.uint8)
    template[line - 1 :: line] = _NL
    template[-1] = _NL
    wrapped = np.empty(n * size, dtype=np.uint8)
    aligned.fill(wrapped, np.arange(n, dtype=np.int64) * size, np.empty(0, np.uint8), np.zeros(n + 1, np.int64),
                 template, CLUSTAL_COLUMNS, 0, n, backend)
    wrapped = wrapped.reshape(n, size)
    heads = [_encode(name[:CLUSTAL_NAME].replace(" ", "_").ljust(CLUSTAL_NAME_COLUMN)) for name in names]
    heads.append(b" " * CLUSTAL_NAME_COLUMN)
    marks = _conservation(aligned, wrapped, nucleotide)
    out.write(title + b"\n\n\n")
    lines = _Lines(heads, CLUSTAL_COLUMNS, b"\n")
    block = len(lines.one)
    step = max(1, BLOCK_BYTES // block)  # blocks per buffer
    for first in range(0, full, step):
        count = min(full, first + step) - first
        table = lines.block(count)
        body = table.reshape(count, block)[:, : lines.size].reshape(count, n + 1, lines.line)[:, :, lines.width :]
        body[:, :n] = wrapped[:, first * line : (first + count) * line].reshape(n, count, line).transpose(1, 0, 2)
        body[:, n, :-1] = marks[first * CLUSTAL_COLUMNS : (first + count) * CLUSTAL_COLUMNS].reshape(count, -1)
        lines.write(out, table)
    if rest:  # the last, narrower block
        last = _Lines(heads, rest, b"\n")
        table = last.block()
        body = table[: last.size].reshape(n + 1, last.line)[:, last.width :]
        body[:n] = wrapped[:, full * line :]
        body[n, :-1] = marks[full * CLUSTAL_COLUMNS :]
        last.write(out, table)
    out.write(b"\n")


def _conservation(aligned: Rows, wrapped: np.ndarray, nucleotide: bool) -> np.ndarray:
    """conservation_line of the rows (``wrapped``: each row wrapped at 50 columns), from the
    columns where every record has a residue (the others get a space)."""
    width, n = aligned.width, len(aligned.names)
    marks = np.full(width, _SPACE, dtype=np.uint8)
    full = np.flatnonzero(_occupied(aligned) == n)
    if n and len(full):
        marks[full] = conservation_line(wrapped[:, full + full // CLUSTAL_COLUMNS], nucleotide)
    return marks


def write_stockholm(out: BinaryIO, aligned: Rows, names: Sequence[str], rests: Sequence[str], backend=None) -> None:
    """Stockholm 1.0: the number of sequences (``#=GF SQ``), each description as ``#=GS name DE``,
    a line per row after a name column, ``//``."""
    width = max(map(len, names))
    start = max(width, 20) + 12
    out.writelines([b"# STOCKHOLM 1.0\n", b"#=GF SQ   %d\n" % len(names)]
                   + [_encode(f"#=GS {name.ljust(width)}  DE {rest}\n") for name, rest in zip(names, rests) if rest])
    _write_rows(out, aligned, [_encode(name.ljust(start)) for name in names], backend)
    out.write(b"//\n")


def write_phylip(out: BinaryIO, aligned: Rows, names: Sequence[str], relaxed: bool, backend=None) -> None:
    """PHYLIP, sequential, a row per line: names (see phylip_names) cut and padded to 10 characters,
    or, relaxed, whole and padded to the longest plus one."""
    pad = max(map(len, names)) + 1 if relaxed else PHYLIP_NAME
    out.write(b"%d %d\n" % (len(names), aligned.width))
    _write_rows(out, aligned, [_encode(name.ljust(pad)) for name in names], backend)


def write_a2m(
    out: BinaryIO, aligned: Rows, names: Sequence[str], rests: Sequence[str], match: np.ndarray, backend=None
) -> None:
    """A2M: a header line and a line of residues per record; match columns (``match``) upper
    case with ``-`` gaps, insert columns lower case with ``.`` gaps."""
    heads = [_encode(f">{name} {rest}\n" if rest else f">{name}\n") for name, rest in zip(names, rests)]
    _write_rows(out, aligned, heads, backend, np.where(match, _GAP, _DOT).astype(np.uint8), A2M_CASE)


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
    return 2 * _occupied(aligned) >= len(aligned.names)


def _occupied(aligned: Rows) -> np.ndarray:
    """The records with a residue in each column (a sequence counted once per record sharing it)."""
    db = aligned.distinct
    weights = None if aligned.index is None else np.repeat(np.bincount(aligned.index, minlength=len(db)), db.lengths)
    return np.bincount(aligned.columns, weights=weights, minlength=aligned.width).astype(np.int64)


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
    match = a3m_match_columns(aligned)
    matches = int(match.sum())
    match_before = np.cumsum(match) - match
    n = len(aligned.names)
    step = max(1, BLOCK_BYTES // (matches + 32))
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        lengths, col, letter = _residues(aligned, lo, hi)
        insert = ~match[col]
        inserts = np.zeros(len(col) + 1, dtype=np.int64)  # insert residues before each residue, over all records
        np.cumsum(insert, out=inserts[1:])
        ends = np.cumsum(lengths)
        before = inserts[ends - lengths]  # inserts before each record's first residue
        line = matches + inserts[ends] - before + 1
        line_start = np.cumsum(line) - line
        text = np.full(int(line.sum()), _GAP, dtype=np.uint8)
        text[line_start + line - 1] = _NL
        letter = lookup(A2M_CASE, letter | insert.view(np.uint8) * np.uint8(INSERT_BIT))
        text[np.repeat(line_start - before, lengths) + match_before[col] + inserts[:-1]] = letter
        view = memoryview(text)
        out.write(b"".join([part for head, a, b in zip(header_bytes(aligned.descriptions[lo:hi]), line_start.tolist(),
                                                       (line_start + line).tolist()) for part in (head, view[a:b])]))
