"""Readers of the alignment formats msa writes (:mod:`msa.io.writers`): Clustal, Stockholm and
PHYLIP (strict and relaxed) here, FASTA, A2M and A3M by :func:`msa.io.fasta.parse_aligned_fasta`.

Every reader returns a :class:`Table`, the rows' bytes one after another with their
gaps and case kept, as the FASTA tokenizer does, and works on whole arrays:

- the lines come from the newline positions, and the words of every line from one
  table lookup of the blanks (a word starts where a blank ends);
- each line is a title, an annotation, a blank line or a row's line: a name and a
  piece of its row (Clustal and Stockholm: the second word; PHYLIP: the rest of the
  line, blanks dropped);
- the rows' lines form blocks (runs of them between blank lines): every block has a
  line per row, in the first block's order (Clustal, Stockholm, interleaved PHYLIP);
  sequential PHYLIP may give each row the same number of lines instead;
- the pieces' bytes are gathered in file order through one mask, and the blocks
  interleaved into rows by a reshape and a transpose per run of blocks of one width.

So reading is linear in the input: a few passes over its bytes. Bad input (a truncated
block, pieces of unequal width, a repeated or missing name, a byte that is not a
residue or a gap, binary data) is an :class:`msa.io.fasta.InputError` naming the input
and the line.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from msa import interrupts
from msa.alphabet import lookup
from msa.io.fasta import (
    ALIGNED_BYTE_CLASS, BAD, GAP, RESIDUE, InputError, describe_byte, parse_aligned_fasta, record_line, text_buffer,
)
from msa.seqdb import _ranges

#: The formats read here (the FASTA family is parsed by msa.io.fasta).
BLOCK_FORMATS = ("clustal", "stockholm", "phylip", "phylip-relaxed")
#: Each format as error messages name it.
FORMAT_NAMES = {"fasta": "FASTA", "a2m": "A2M", "a3m": "A3M", "clustal": "Clustal", "stockholm": "Stockholm",
                "phylip": "PHYLIP", "phylip-relaxed": "relaxed PHYLIP"}
#: The first word of a Clustal file's title line (Clustal, MUSCLE and others write their name).
CLUSTAL_TITLES = (b"CLUSTAL", b"MUSCLE", b"PROBCONS", b"MSAPROBS", b"Kalign")
#: Strict PHYLIP's name width, in characters.
PHYLIP_NAME = 10

_NL, _CR, _HASH = 10, 13, ord("#")
_BLANK = np.zeros(256, dtype=np.uint8)  # 0/1: looked up by msa.alphabet.lookup, viewed as bool
_BLANK[np.frombuffer(b" \t\n\r\v\f", dtype=np.uint8)] = 1
_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[ord("0") : ord("9") + 1] = True
_KEPT = RESIDUE | GAP


@dataclass
class Table:
    """Rows read from a file: row ``i`` is ``text[offsets[i]:offsets[i+1]]`` (uint8, gaps and case
    as written); ``line(i)`` is the line where row ``i`` starts (for error messages)."""

    names: list[str]
    descriptions: list[str]
    text: np.ndarray
    offsets: np.ndarray
    line: Callable[[int], int]


def parse_alignment(data: bytes | bytearray, fmt: str, label: str = "input",
                    table: np.ndarray = ALIGNED_BYTE_CLASS) -> Table:
    """The rows of an alignment in ``fmt`` (``fasta``, ``a2m``, ``a3m`` or one of BLOCK_FORMATS).

    ``table``: each byte's class (msa.io.fasta's ALIGNED_BYTE_CLASS; the scorer's also
    counts qscore's other gap characters as gaps).

    Raises:
        InputError: bad input, naming the line.
    """
    if fmt in ("fasta", "a2m", "a3m"):
        names, descriptions, text, offsets = parse_aligned_fasta(data, label, table)
        return Table(names, descriptions, text, offsets, lambda i: record_line(data, i))
    if fmt not in BLOCK_FORMATS:
        raise ValueError(f"no native reader of {fmt!r}")
    kind = FORMAT_NAMES[fmt]
    buf = text_buffer(data, label, kind)
    lines = _Lines(buf)
    interrupts.check()
    if fmt == "clustal":
        return _clustal(buf, lines, _Where(label, kind), table)
    if fmt == "stockholm":
        return _stockholm(buf, lines, _Where(label, kind), table)
    return _phylip(buf, lines, _Where(label, kind), table, relaxed=fmt == "phylip-relaxed")


class _Lines:
    """The lines of ``buf``: ``start``, ``end`` (without the newline and a CR before it), and their
    words: the ``first`` word's index and their ``count``; word ``k`` spans ``ws[k]`` .. ``we[k]``."""

    def __init__(self, buf: np.ndarray) -> None:
        newlines = np.flatnonzero(buf == _NL)
        start = np.concatenate(([0], newlines + 1)).astype(np.int64)
        end = np.append(newlines, len(buf)).astype(np.int64)
        if start[-1] == len(buf):  # the newline that ends the last line
            start, end = start[:-1], end[:-1]
        end -= (end > start) & (buf[np.maximum(end - 1, 0)] == _CR)
        self.start, self.end = start, end
        blank = np.ones(len(buf) + 2, dtype=bool)
        blank[1:-1] = lookup(_BLANK, buf).view(bool)
        self.ws = np.flatnonzero(blank[:-2] & ~blank[1:-1])  # a word's first byte
        self.we = np.flatnonzero(~blank[1:-1] & blank[2:]) + 1  # one past its last
        self.first = np.searchsorted(self.ws, start)
        self.count = np.searchsorted(self.ws, end) - self.first
        safe = np.minimum(start, len(buf) - 1)
        self.leading = np.where(end > start, buf[safe], _NL)  # each line's first byte (a newline if empty)

    def __len__(self) -> int:
        return len(self.start)

    def word(self, lines: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) of word ``k`` of each of ``lines`` (each has more than ``k`` words)."""
        at = self.first[lines] + k
        return self.ws[at], self.we[at]

    def title(self) -> int | None:
        """The first line that is not blank."""
        found = np.flatnonzero(self.count > 0)
        return int(found[0]) if len(found) else None


@dataclass
class _Where:
    """What an error message names: the input and its format."""

    label: str
    kind: str

    def error(self, line: int, text: str) -> InputError:
        """``label: line N: text`` (``line``: 0-based)."""
        return InputError(f"{self.label}: line {int(line) + 1}: {text}")


def _clustal(buf: np.ndarray, lines: _Lines, where: _Where, table: np.ndarray) -> Table:
    """Clustal: a title line (CLUSTAL, MUSCLE, ...), then blocks of lines ``name residues [count]``;
    a line that starts with a blank (the conservation marks) or is blank ends a block."""
    title = lines.title()
    if title is None or not bytes(buf[lines.start[title] : lines.end[title]]).startswith(CLUSTAL_TITLES):
        raise InputError(f"{where.label}: not Clustal (its first line does not start with CLUSTAL)")
    rows = np.flatnonzero((np.arange(len(lines)) > title) & (_BLANK[lines.leading] == 0))
    counts = lines.count[rows]
    bad = rows[(counts < 2) | (counts > 3)]
    counted = rows[counts == 3]
    cs, ce = lines.word(counted, 2)
    digits = np.logical_and.reduceat(_DIGIT[buf[_ranges(cs, ce - cs)]], np.cumsum(ce - cs) - (ce - cs)) \
        if len(counted) else np.ones(0, dtype=bool)
    bad = np.sort(np.concatenate((bad, counted[~digits])))
    if len(bad):
        raise where.error(bad[0], "not a line of Clustal (a name, the residues and at most a count)")
    ns, ne = lines.word(rows, 0)
    ps, pe = lines.word(rows, 1)
    return _interleaved(buf, lines, where, table, rows, _runs(rows), ps, pe, ns, ne)


def _stockholm(buf: np.ndarray, lines: _Lines, where: _Where, table: np.ndarray) -> Table:
    """Stockholm: ``# STOCKHOLM 1.x``, blocks of lines ``name residues``, annotation lines (``#``)
    anywhere, ``//``. ``#=GS name DE text`` lines give the descriptions."""
    title = lines.title()
    if title is None or not bytes(buf[lines.start[title] : lines.end[title]]).startswith(b"# STOCKHOLM"):
        raise InputError(f"{where.label}: not Stockholm (its first line is not '# STOCKHOLM 1.0')")
    ends = np.flatnonzero((lines.end - lines.start == 2) & (lines.leading == ord("/")))
    ends = ends[buf[lines.start[ends] + 1] == ord("/")]
    if not len(ends):
        raise where.error(len(lines) - 1, "no '//' line ends the alignment (a truncated file?)")
    stop = int(ends[0])
    after = np.flatnonzero(lines.count[stop + 1 :] > 0)
    if len(after):
        raise where.error(stop + 1 + after[0], "text after '//' (msa reads one alignment a file)")
    index = np.arange(len(lines))
    inside = (index > title) & (index < stop) & (lines.count > 0)
    note = inside & (lines.leading == _HASH)
    rows = np.flatnonzero(inside & ~note)
    bad = rows[lines.count[rows] != 2]
    if len(bad):
        raise where.error(bad[0], "not a line of Stockholm (a name and the residues)")
    # A block ends at a blank line; annotation lines among its lines (#=GR) do not end it.
    kept = np.flatnonzero(~note)
    ns, ne = lines.word(rows, 0)
    ps, pe = lines.word(rows, 1)
    result = _interleaved(buf, lines, where, table, rows, _runs(np.searchsorted(kept, rows)), ps, pe, ns, ne)
    if len(set(result.names)) != len(result.names):
        seen: set[str] = set()
        twice = next(i for i, name in enumerate(result.names) if name in seen or seen.add(name))
        raise where.error(result.line(twice) - 1, f"the name {result.names[twice]!r} twice in a block "
                          "(Stockholm's readers join the lines of one name)")
    result.descriptions = _descriptions(buf, lines, np.flatnonzero(note), result.names)
    return result


def _descriptions(buf: np.ndarray, lines: _Lines, notes: np.ndarray, names: list[str]) -> list[str]:
    """Each row's description: its name, then the text of its ``#=GS name DE`` lines."""
    notes = notes[(lines.count[notes] >= 4) & (lines.end[notes] - lines.start[notes] > 4)]
    tag = buf[lines.start[notes, None] + np.arange(5)]
    fs, fe = lines.word(notes, 2)
    de = notes[(tag == np.frombuffer(b"#=GS ", np.uint8)).all(axis=1) & (fe - fs == 2) & (buf[fs] == ord("D"))
               & (buf[fs + 1] == ord("E"))]
    who = _strings(buf, *lines.word(de, 1))
    text = [t.strip() for t in _strings(buf, lines.word(de, 3)[0], lines.end[de])]
    rest = dict(zip(who, text))
    if len(rest) < len(who):  # several DE lines of a name: joined
        joined: dict[str, list[str]] = {}
        for name, value in zip(who, text):
            joined.setdefault(name, []).append(value)
        rest = {name: " ".join(values) for name, values in joined.items()}
    return [f"{name} {rest[name]}" if name in rest else name for name in names]


def _phylip(buf: np.ndarray, lines: _Lines, where: _Where, table: np.ndarray, relaxed: bool) -> Table:
    """PHYLIP: ``n m``, then ``n`` rows of ``m`` columns: a name (strict: the first 10 characters;
    relaxed: the first word) and the residues, blanks dropped. A line per row, interleaved blocks
    (the later ones without names), or the same number of lines for every row."""
    title = lines.title()
    numbers = bytes(buf[lines.start[title] : lines.end[title]]).split() if title is not None else []
    if len(numbers) < 2 or not numbers[0].isdigit() or not numbers[1].isdigit() or int(numbers[0]) == 0:
        raise InputError(f"{where.label}: not {where.kind} (its first line is not the numbers of rows and columns)")
    n, width = int(numbers[0]), int(numbers[1])
    rows = np.flatnonzero((np.arange(len(lines)) > title) & (lines.count > 0))
    block = _runs(rows)
    sizes = np.bincount(block)
    sequential = len(sizes) == 1 and len(rows) > n and len(rows) % n == 0
    if len(rows) < n or (not sequential and sizes[0] != n):
        last = rows[min(len(rows), n) - 1] if len(rows) else title
        raise where.error(last, f"{min(len(rows), int(sizes[0]))} rows where the first line says {n} "
                          "(a truncated file?)")
    per_row = len(rows) // n if sequential else 1
    named = rows[:: per_row][:n]
    if relaxed:
        if np.any(lines.count[named] < 2):
            raise where.error(named[np.flatnonzero(lines.count[named] < 2)[0]], "a name without residues")
        ns, ne = lines.word(named, 0)
        names = _strings(buf, ns, ne)
    else:
        names, ne = _strict_names(buf, lines.start[named], lines.end[named])
    ps, pe = lines.start[rows].copy(), lines.end[rows]
    ps[np.searchsorted(rows, named)] = ne
    interrupts.check()
    if sequential:
        result = _sequential(buf, lines, where, table, rows, ps, pe, names, per_row)
    else:
        result = _interleaved(buf, lines, where, table, rows, block, ps, pe, None, None, names)
    got = int(result.offsets[1]) if n else 0
    if got != width:
        raise where.error(rows[0] if len(rows) else title,
                          f"rows of {got} columns where the first line says {width}")
    return result


def _strict_names(buf: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Strict PHYLIP's names (the first 10 characters of each line, outer blanks dropped) and where
    each line's residues start: 10 bytes on, or more where a name holds UTF-8."""
    span = np.minimum(end - start, 4 * PHYLIP_NAME)
    heads = _strings(buf, start, start + span)
    cut = [h[:PHYLIP_NAME] for h in heads]
    if buf[_ranges(start, span)].max(initial=0) < 0x80:
        stop = start + np.minimum(span, PHYLIP_NAME)
    else:
        stop = start + np.array([len(c.encode("utf-8", "surrogateescape")) for c in cut], dtype=np.int64)
    return [c.strip() for c in cut], stop


def _runs(at: np.ndarray) -> np.ndarray:
    """The block of each of the ascending line numbers ``at``: blocks are runs of consecutive lines."""
    new = np.ones(len(at), dtype=bool)
    new[1:] = at[1:] != at[:-1] + 1
    return np.cumsum(new) - 1


def _interleaved(buf: np.ndarray, lines: _Lines, where: _Where, table: np.ndarray, rows: np.ndarray,
                 block: np.ndarray, ps: np.ndarray, pe: np.ndarray, ns: np.ndarray | None, ne: np.ndarray | None,
                 names: list[str] | None = None) -> Table:
    """Rows from blocks of pieces (line ``rows[k]`` holds piece ``ps[k]:pe[k]``, in block ``block[k]``;
    every block has a line per row, in order). Names are the first block's ``ns:ne`` (then every
    block must repeat them), or ``names``."""
    if not len(rows):
        raise InputError(f"{where.label}: no rows (an empty {where.kind} alignment)")
    sizes = np.bincount(block)
    n = int(sizes[0])
    if np.any(sizes != n):
        b = int(np.flatnonzero(sizes != n)[0])
        first = int(np.searchsorted(block, b))
        raise where.error(rows[first + min(n, int(sizes[b])) - 1],
                          f"a block of {sizes[b]} rows where the first block has {n} (a truncated block?)")
    blocks = len(sizes)
    if ns is not None and ne is not None:
        names = _strings(buf, ns[:n], ne[:n])
        _same_names(buf, where, rows, ns, ne, n, names)
    assert names is not None
    counts = _columns(lines, ps, pe).reshape(blocks, n)
    uneven = np.flatnonzero((counts != counts[:, :1]).any(axis=1))
    if len(uneven):
        b = int(uneven[0])
        k = int(np.flatnonzero(counts[b] != counts[b, 0])[0])
        raise where.error(rows[b * n + k], f"{counts[b, k]} columns where the block's first row "
                          f"(line {rows[b * n] + 1}) has {counts[b, 0]}: rows of unequal width")
    flat = _gather(buf, lines, where, table, ps, pe)
    widths = counts[:, 0]
    width = int(widths.sum())
    if blocks == 1:
        text = flat
    else:
        matrix = np.empty((n, width), dtype=np.uint8)
        run = np.flatnonzero(np.append(True, widths[1:] != widths[:-1]))
        at = col = 0
        for b0, b1 in zip(run, np.append(run[1:], blocks)):  # runs of blocks of one width: one or two
            w, k = int(widths[b0]), int(b1 - b0)
            matrix[:, col : col + k * w] = flat[at : at + k * n * w].reshape(k, n, w).transpose(1, 0, 2).reshape(n, -1)
            at, col = at + k * n * w, col + k * w
            interrupts.check()
        text = matrix.reshape(-1)
    return _table(where, table, names, text, np.full(n, width), rows[:n])


def _sequential(buf: np.ndarray, lines: _Lines, where: _Where, table: np.ndarray, rows: np.ndarray,
                ps: np.ndarray, pe: np.ndarray, names: list[str], per_row: int) -> Table:
    """Rows of ``per_row`` consecutive lines each (sequential PHYLIP)."""
    n = len(names)
    lengths = _columns(lines, ps, pe).reshape(n, per_row).sum(axis=1)
    uneven = np.flatnonzero(lengths != lengths[0])
    if len(uneven):
        i = int(uneven[0])
        raise where.error(rows[i * per_row], f"a row of {lengths[i]} columns where the first has {lengths[0]}: "
                          "rows of unequal width")
    return _table(where, table, names, _gather(buf, lines, where, table, ps, pe), lengths, rows[::per_row])


def _table(where: _Where, table: np.ndarray, names: list[str], text: np.ndarray, lengths: np.ndarray,
           first: np.ndarray) -> Table:
    """The Table of rows of ``lengths`` bytes of ``text``, starting on lines ``first``; a row of
    gaps only is an error."""
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    residue = lookup(table, text) & RESIDUE
    if len(text) == len(names) * int(lengths[0]):  # rows of one width: a matrix
        has = residue.reshape(len(names), -1).any(axis=1) if len(text) else np.zeros(len(names), bool)
    else:
        has = np.bitwise_or.reduceat(residue, offsets[:-1]) > 0
    if not has.all():
        i = int(np.flatnonzero(~has)[0])
        raise where.error(first[i], f"the row {names[i]!r} has no residues")
    interrupts.check()
    return Table(names, list(names), text, offsets, lambda i: int(first[i]) + 1)


def _columns(lines: _Lines, ps: np.ndarray, pe: np.ndarray) -> np.ndarray:
    """The bytes of each piece ``ps[k]:pe[k]`` that are not blanks (its columns, once any other
    byte is known to be a residue or a gap), from the words' lengths: the words that end inside
    it, less the part of the first before ``ps`` (strict PHYLIP's name may run into the row)."""
    ws, we = lines.ws, lines.we
    lengths = np.zeros(len(ws) + 1, dtype=np.int64)
    np.cumsum(we - ws, out=lengths[1:])
    a = np.searchsorted(we, ps, side="right")  # the first word that ends after ps
    b = np.searchsorted(ws, pe, side="left")  # the words that start before pe
    inside = np.maximum(b - a, 0)
    counts = np.where(inside > 0, lengths[np.maximum(b, a)] - lengths[a], 0)
    cut = np.where(inside > 0, np.maximum(ps - ws[np.minimum(a, len(ws) - 1)], 0), 0)
    return counts - cut


def _gather(buf: np.ndarray, lines: _Lines, where: _Where, table: np.ndarray, ps: np.ndarray,
            pe: np.ndarray) -> np.ndarray:
    """The residues and gaps of every piece, in file order, through one mask of the input (the
    pieces lie on lines of their own, so no two start or end at one byte); a byte in a piece
    that is neither, nor a blank, is an error naming its line."""
    mark = np.zeros(len(buf) + 1, dtype=np.int8)
    mark[ps] += 1
    mark[pe] -= 1
    inside = np.cumsum(mark[:-1], dtype=np.int8).view(bool)
    del mark
    interrupts.check()
    cls = lookup(table, buf)
    cls[~inside] = 0
    if (np.bitwise_or.reduce(cls) if len(cls) else 0) & BAD:
        pos = int(np.flatnonzero(cls == BAD)[0])
        line = int(np.searchsorted(lines.start, pos, side="right")) - 1
        raise where.error(line, f"{describe_byte(int(buf[pos]))}, which is not a residue letter or a gap")
    interrupts.check()
    return buf[(cls & _KEPT) != 0]


def _same_names(buf: np.ndarray, where: _Where, rows: np.ndarray, ns: np.ndarray, ne: np.ndarray, n: int,
                names: list[str]) -> None:
    """Every block names its rows as the first block does, in its order."""
    lengths = (ne - ns).reshape(-1, n)
    same = (lengths == lengths[0]).all(axis=1)
    if same.all() and len(lengths) > 1:
        flat = buf[_ranges(ns[n:], ne[n:] - ns[n:])].reshape(len(lengths) - 1, -1)
        first = buf[_ranges(ns[:n], ne[:n] - ns[:n])]
        same[1:] = (flat == first).all(axis=1)
    if not same.all():
        b = int(np.flatnonzero(~same)[0])
        got = _strings(buf, ns[b * n : (b + 1) * n], ne[b * n : (b + 1) * n])
        k = next(k for k in range(n) if got[k] != names[k])
        raise where.error(rows[b * n + k], f"the name {got[k]!r} where the first block has {names[k]!r}")


def _strings(buf: np.ndarray, start: np.ndarray, end: np.ndarray) -> list[str]:
    """The text of each range, decoded in one piece (odd bytes kept by surrogateescape)."""
    if not len(start):
        return []
    lengths = end - start
    out = np.full(int(lengths.sum()) + len(start), _NL, dtype=np.uint8)
    at = np.cumsum(lengths + 1) - (lengths + 1)
    out[_ranges(at, lengths)] = buf[_ranges(start, lengths)]
    return out.tobytes().decode("utf-8", "surrogateescape").split("\n")[:-1]
