"""FASTA in and out, with whole-array NumPy work: never a Python object per residue.

Reading rules (what a user of FAMSA or MAFFT expects, stated once):

- plain or gzipped (detected from the magic bytes, not the name), from a path or ``-``;
- LF, CRLF or lone-CR line endings, any line length, a leading UTF-8 byte-order mark;
- the name is the first word of the header, the description the whole header line
  (without ``>``), kept exactly for output;
- residues are kept exactly as read (case, ``*``, U/O/J/B/Z/X); blanks and the gap
  characters ``-`` and ``.`` are removed, so an aligned input is realigned;
- anything else in a sequence (digits, punctuation, control or non-ASCII bytes) is
  an error naming the record, the line and the character;
- a record with no residues is an error naming it and its line (FAMSA skips such
  records silently; an error is clearer than a quietly shorter output).

:func:`read_aligned_fasta` reads an alignment as written instead (case and gaps
kept, by name), for scoring against a reference; :func:`parse_aligned_fasta` reads
an alignment's rows in file order with gaps and case kept (``msa add``/``merge``;
A2M/A3M insert columns are expanded in :mod:`msa.io.formats`).
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import mmap
import os
import re
import resource
import stat
import sys
import zlib
from typing import BinaryIO, Callable, Protocol, Sequence

import numpy as np

from msa import interrupts
from msa.alphabet import ENCODE, GAP_BYTES, INVALID, lookup
from msa.io.output import check_space, needing, regular_file, reserve
from msa.seqdb import SeqDB, _ranges

#: Residues per output line, as FAMSA and MAFFT write them.
LINE_WIDTH = 60
#: About this many bytes of rows are placed at a time by write_fasta (one reused buffer).
BLOCK_BYTES = 1 << 22
#: Bytes of output file mapped at a time by the mapped writer (the pages it has filled are
#: resident until the window is unmapped). Each window costs a fixed time (its map, the
#: threads' start, its unmapping), so larger windows write faster: on the 1-GPU H200 host
#: (16 cores), 12.9 GB of 23,393-column rows at 1.77 GB/s with 64 MB windows, 2.97 GB/s with
#: 256 MB, 7.41 GB/s with 1 GB (benchmarks/write_rate.py's ceiling there: ~8.5 GB/s).
MAP_BYTES = 1 << 30

#: Bytes read (and decompressed) at a time: an input is never held twice, compressed and whole.
READ_CHUNK = 1 << 20
#: Reading holds about this many bytes per byte of text at its peak (the text, its byte
#: classes, the kept residues and the line positions): an input may hold the memory free to
#: this process divided by this (:func:`input_limit`).
READ_OVERHEAD = 4

_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # zlib reads one gzip member (header, data, CRC and size checked)
#: Binary data are looked for in the first this many bytes of text.
_PROBE_BYTES = 1 << 20
_BOM = b"\xef\xbb\xbf"
_NL, _GT, _HASH = 10, ord(">"), ord("#")
_BLANK = b" \t\n\r\v\f"

#: Byte classes of sequence text: the line end, a residue, a gap kept (aligned input), an invalid
#: byte, or one dropped (other blanks; gaps of unaligned input). Bit flags: OR-ing a record's
#: classes tells at once whether it has a residue, a bad byte, or bytes to drop besides line ends.
NEWLINE, RESIDUE, GAP, BAD, SKIP = 0, 1, 2, 4, 8


def _class_table() -> np.ndarray:
    table = np.where(ENCODE == INVALID, BAD, RESIDUE).astype(np.uint8)
    table[np.frombuffer(_BLANK + GAP_BYTES, dtype=np.uint8)] = SKIP
    table[_NL] = NEWLINE
    return table


#: byte -> NEWLINE, SKIP, RESIDUE or BAD.
BYTE_CLASS = _class_table()
#: The same for aligned input, where the gap characters are kept (GAP).
ALIGNED_BYTE_CLASS = BYTE_CLASS.copy()
ALIGNED_BYTE_CLASS[np.frombuffer(GAP_BYTES, dtype=np.uint8)] = GAP
_IS_BLANK = np.zeros(256, dtype=bool)
_IS_BLANK[np.frombuffer(_BLANK, dtype=np.uint8)] = True


def _binary_table() -> np.ndarray:
    """Control bytes that never occur in a text file (tab, LF, VT, FF, CR do)."""
    table = np.zeros(256, dtype=bool)
    table[[*range(0, 9), *range(14, 32), 127]] = True
    return table


_BINARY = _binary_table()


class InputError(ValueError):
    """The input is not a usable set of protein sequences; the message says why and where."""


def read_input(source: str | os.PathLike[str], limit: int | None = None, kind: str = "FASTA") -> bytes | bytearray:
    """The raw bytes of a path, or of stdin for ``-``, decompressed when gzipped.

    Read a chunk at a time (gzip streamed: never whole in memory, compressed and not),
    at most ``limit`` bytes of text (:func:`input_limit` by default); binary data
    (``/dev/zero``) are refused on their first chunk, as not ``kind`` (the format expected). A read or an open that waits (a FIFO,
    a pipe) gives way to SIGINT and SIGTERM.

    Raises:
        InputError: more text than the limit, binary data, damaged gzip data.
        OSError: the file cannot be read.
    """
    label = _label(source)
    limit = input_limit() if limit is None else limit
    with contextlib.ExitStack() as stack:
        with interrupts.blocking():  # opening a FIFO waits for its writer
            fh = sys.stdin.buffer if str(source) == "-" and sys.stdin else None
            if str(source) != "-":
                fh = stack.enter_context(open(source, "rb"))
        if fh is None:
            raise OSError(errno.EBADF, "closed", label)
        size = _regular_size(fh)
        if size is not None and size > limit:
            raise _too_large(label, limit)
        pending = _read_chunk(fh)
        gzipped = pending.startswith(_GZIP_MAGIC)
        unzip = zlib.decompressobj(_GZIP_WBITS) if gzipped else None
        data, fed, probed = bytearray(), False, False
        try:
            while pending:
                if unzip is None:
                    data += pending
                    pending = b""
                else:
                    data += unzip.decompress(pending, READ_CHUNK)
                    pending, fed = unzip.unconsumed_tail, True
                    if unzip.eof:  # another member may follow (`cat a.gz b.gz`)
                        unzip, pending, fed = zlib.decompressobj(_GZIP_WBITS), unzip.unused_data + pending, False
                if len(data) > limit:
                    raise _too_large(label, limit)
                if not probed and len(data) >= _PROBE_BYTES:  # binary data fail here, not at the limit
                    _check_text(data, label, kind)
                    probed = True
                if not pending:
                    pending = _read_chunk(fh)
            if fed:
                raise EOFError("the compressed data end before their end-of-stream marker")
        except (EOFError, zlib.error) as exc:
            raise InputError(f"{label}: damaged gzip data ({exc})") from None
    return data


def input_limit() -> int:
    """The most bytes of text one input may hold: the memory free to this process (available
    memory, and the room left under an address-space limit) over READ_OVERHEAD."""
    free = _available_memory()
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (OSError, ValueError):
        soft = resource.RLIM_INFINITY
    if soft != resource.RLIM_INFINITY:
        free = min(free, max(soft - _address_space(), 0))
    return max(free // READ_OVERHEAD, READ_CHUNK)


def _available_memory() -> int:
    """MemAvailable (Linux; the free pages elsewhere), less under a cgroup's memory limit."""
    free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    with contextlib.suppress(OSError, ValueError, StopIteration):
        with open("/proc/meminfo", "rb") as fh:
            free = int(next(line for line in fh if line.startswith(b"MemAvailable:")).split()[1]) * 1024
    with contextlib.suppress(OSError, ValueError):
        with open("/sys/fs/cgroup/memory.max", "rb") as fh, open("/sys/fs/cgroup/memory.current", "rb") as now:
            cap = fh.read().strip()
            if cap != b"max":
                free = min(free, int(cap) - int(now.read()))
    return free


def _address_space() -> int:
    """Bytes of address space this process maps (VmSize; 0 where unknown)."""
    with contextlib.suppress(OSError, ValueError, StopIteration):
        with open("/proc/self/status", "rb") as fh:
            return int(next(line for line in fh if line.startswith(b"VmSize:")).split()[1]) * 1024
    return 0


def _too_large(label: str, limit: int) -> InputError:
    return InputError(
        f"{label}: more than {limit:,} bytes of text, the limit of one input here "
        f"(1/{READ_OVERHEAD} of the memory free to msa)"
    )


def _regular_size(fh: BinaryIO) -> int | None:
    """The size of a regular file (None for a pipe, a terminal, a device)."""
    try:
        info = os.fstat(fh.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _read_chunk(fh: BinaryIO) -> bytes:
    with interrupts.blocking():
        return fh.read(READ_CHUNK)


def read_fasta(source: str | os.PathLike[str]) -> SeqDB:
    """Read a protein FASTA file (path, ``-`` for stdin, gzipped or not) into a SeqDB.

    Raises:
        InputError: the file is empty, binary, not FASTA, or has a bad record.
        OSError: the file cannot be read.
    """
    return parse_fasta(read_input(source), _label(source))


def read_aligned_fasta(path: str | os.PathLike[str], keep: set[str] | None = None) -> dict[str, bytes]:
    """Name -> row bytes of an aligned FASTA file, case and gaps kept (scoring's references need both).

    ``keep``: only these names get their rows (every name is still checked for
    duplicates). The file is memory-mapped and only kept rows are copied, so
    scoring 2,000 reference rows inside an alignment of 10^6 rows of 10^4
    columns reads the file once instead of holding it twice.

    Raises:
        ValueError: on a duplicated name or text before the first header.
    """
    records: dict[str, bytes] = {}
    seen: set[str] = set()
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return records
        data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    with data:
        size = len(data)
        pos = data.find(b">")
        if pos < 0 or data[:pos].strip():
            raise ValueError(f"{path}: not FASTA (no '>' header first)")
        while pos >= 0:
            line_end = data.find(b"\n", pos)
            line_end = size if line_end < 0 else line_end
            nxt = data.find(b"\n>", line_end)
            end = size if nxt < 0 else nxt
            words = data[pos + 1 : line_end].split()
            pos = nxt + 1 if nxt >= 0 else -1
            if not words:
                continue
            name = words[0].decode("utf-8", "surrogateescape")  # as parse_fasta decodes headers
            if name in seen:
                raise ValueError(f"{path}: duplicated sequence name {name!r}")
            seen.add(name)
            if keep is None or name in keep:
                records[name] = b"".join(data[line_end:end].split())
    return records


def parse_fasta(data: bytes, label: str = "input") -> SeqDB:
    r"""Parse FASTA bytes; ``label`` names the input in error messages.

    Example:
        >>> db = parse_fasta(b">a first\r\nMK-v*\r\n>b\r\nUL\r\n")
        >>> db.names, db.descriptions, db.sequence(0), db.sequence(1)
        (['a', 'b'], ['a first', 'b'], b'MKv*', b'UL')
    """
    names, headers, letters, offsets = _parse_records(data, label, aligned=False)
    return SeqDB.from_arrays(names, headers, letters, offsets)


def parse_aligned_fasta(
    data: bytes, label: str = "input", table: np.ndarray | None = None
) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    r"""Parse aligned FASTA (or A2M/A3M) bytes with their gaps and case kept, in file order.

    The same rules as :func:`parse_fasta` (names, headers, blanks, bad bytes,
    records with no residues), except that ``-`` and ``.`` stay in the rows and
    lines starting with ``#`` before the first header (the title line of
    HH-suite's A3M files) are skipped. ``table`` classes the bytes (default:
    ALIGNED_BYTE_CLASS; the scorer's also takes qscore's gap characters). Returns ``(names, headers, text, offsets)``:
    row ``i`` is ``text[offsets[i]:offsets[i+1]]`` (uint8, gaps included).

    Example:
        >>> names, _, text, off = parse_aligned_fasta(b"#A3M\n>a\nMK-v\n>b\nm.KV\n")
        >>> names, text[off[0]:off[1]].tobytes(), text[off[1]:off[2]].tobytes()
        (['a', 'b'], b'MK-v', b'm.KV')
    """
    return _parse_records(data, label, aligned=True, table=table)


def _parse_records(
    data: bytes, label: str, aligned: bool, table: np.ndarray | None = None
) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """The one FASTA tokenizer: (names, headers, kept bytes, offsets); gaps kept when ``aligned``.

    A few passes over the bytes, none with more than a byte per input byte: lines come from
    the newline positions, the header lines are ranges (only their bytes are gathered and
    cleared), and the byte classes come from one table lookup. Where a record drops nothing but line ends (the
    common case), its length is arithmetic on its lines; only otherwise are its bytes summed.
    """
    buf = text_buffer(data, label)
    newlines = _positions(buf, _NL)
    line_starts = np.concatenate(([0], newlines + 1))
    line_starts = line_starts[line_starts < len(buf)]
    line_ends = np.append(newlines, len(buf))[: len(line_starts)]  # each line's newline, or the end
    head_lines = np.flatnonzero(buf[line_starts] == _GT)
    head_starts, head_ends = line_starts[head_lines], line_ends[head_lines]
    if len(head_starts) == 0:
        if not _IS_BLANK[buf].all():
            raise InputError(f"{label}: not FASTA (no line starts with '>')")
        raise InputError(f"{label}: empty input (only blank lines)")

    first = int(head_starts[0])
    lead = ~_IS_BLANK[buf[:first]]
    if aligned:  # '#' title lines before the first record (A3M) are not sequence
        titles = np.flatnonzero(buf[line_starts[: head_lines[0]]] == _HASH)
        lead[_ranges(line_starts[titles], line_ends[titles] - line_starts[titles])] = False
    lead = np.flatnonzero(lead)
    if len(lead):
        raise InputError(
            f"{label}: not FASTA (line {_line_of(buf, int(lead[0]))} comes before the first '>' header)"
        )

    # Every byte of the header lines, each with its newline (the last line may have none): ranges,
    # not a mask of the input (a pass and a fresh byte per input byte).
    in_header = _ranges(head_starts, np.minimum(head_ends + 1, len(buf)) - head_starts)
    header_text = buf[in_header].tobytes()
    headers = _headers(header_text)
    names = _first_words(headers, header_text)
    if not all(names):
        unnamed = names.index("")
        raise InputError(f"{label}: line {_line_of(buf, int(head_starts[unnamed]))}: header has no name")

    cls = lookup(table if table is not None else ALIGNED_BYTE_CLASS if aligned else BYTE_CLASS, buf)
    cls[:first] = NEWLINE  # blank, or title lines: not sequence
    cls[in_header] = NEWLINE
    del in_header
    # The classes in each record's text, from its header's newline on (a header ending the input has none).
    inside = head_ends < len(buf)
    present = np.zeros(len(head_ends), dtype=np.uint8)
    present[inside] = np.bitwise_or.reduceat(cls, head_ends[inside])
    if np.any(present & BAD):
        pos = int(np.flatnonzero(cls == BAD)[0])
        rec = int(np.searchsorted(head_starts, pos, side="right")) - 1
        raise InputError(
            f"{label}: line {_line_of(buf, pos)}: record {names[rec]!r} has "
            f"{describe_byte(int(buf[pos]))}, which is not a residue letter"
        )
    empty = np.flatnonzero((present & RESIDUE) == 0)
    if len(empty):
        rec = int(empty[0])
        raise InputError(
            f"{label}: line {_line_of(buf, int(head_starts[rec]))}: record {names[rec]!r} "
            f"has no residues" + (f" ({len(empty)} such records)" if len(empty) > 1 else "")
        )

    # Every record has text by now (head_ends are all inside).
    if np.any(present & SKIP):  # blanks within lines, CRLF, gaps of unaligned text: count what is kept
        keep = (cls & (RESIDUE | GAP)) != 0
        counts = np.add.reduceat(keep.view(np.uint8), head_ends, dtype=np.int64)
    else:  # only line ends to drop: a record keeps its text less one newline per line
        keep = cls != NEWLINE if aligned else cls.view(bool)  # unaligned: only 0 and 1 are left
        text_ends = np.append(head_starts[1:], len(buf))
        counts = text_ends - head_ends - np.diff(np.append(head_lines, len(newlines)))
    offsets = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return names, headers, buf[keep], offsets


def text_buffer(data: bytes | bytearray, label: str, kind: str = "FASTA") -> np.ndarray:
    """The bytes of a text input as uint8, for the readers of every format: a leading UTF-8
    byte-order mark dropped, classic Mac line ends (CR alone) made newlines.

    Raises:
        InputError: empty input, or binary data (naming the byte and its line).
    """
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    if len(data) == 0:
        raise InputError(f"{label}: empty input")
    _check_text(data, label, kind)
    if b"\n" not in data and b"\r" in data:  # classic Mac line endings
        data = data.replace(b"\r", b"\n")
    return np.frombuffer(data, dtype=np.uint8)


def record_line(data: bytes | bytearray, record: int) -> int:
    """The line of record ``record``'s header (0-based) in FASTA ``data``, for an error message."""
    buf = np.frombuffer(data, dtype=np.uint8)
    heads = np.flatnonzero((buf == _GT) & np.append(True, buf[:-1] == _NL))
    return _line_of(buf, int(heads[record])) if record < len(heads) else 0


def _check_text(data: bytes | bytearray, label: str, kind: str = "FASTA") -> None:
    """Binary data show themselves in their first _PROBE_BYTES (a leading byte-order mark
    aside): an InputError naming the first control byte that no text file holds."""
    start = len(_BOM) if data.startswith(_BOM) else 0
    buf = np.frombuffer(data, dtype=np.uint8)[start : start + _PROBE_BYTES]
    binary = np.flatnonzero(_BINARY[buf])
    if len(binary):
        pos = int(binary[0])
        raise InputError(
            f"{label}: binary data, not {kind} (byte 0x{buf[pos]:02x} on line {_line_of(buf, pos)})"
        )


def _label(source: str | os.PathLike[str]) -> str:
    return "stdin" if str(source) == "-" else os.fspath(source)


def _positions(buf: np.ndarray, byte: int, block: int = 1 << 20) -> np.ndarray:
    """Where ``byte`` occurs in ``buf``, found a block at a time: a mask of the whole input
    (330 MB at 10^6 sequences) cost more in fresh memory than the search itself."""
    found = [np.flatnonzero(buf[lo : lo + block] == byte) + lo for lo in range(0, len(buf), block)]
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def _headers(text: bytes) -> list[str]:
    """Each header's text after '>', trailing CRs dropped (``text``: the header lines, one after
    another); odd bytes survive a write via surrogateescape. Decoded in one piece: a decode per
    header cost more than the rest of the reading at 10^6 records. Line ends are ASCII, so
    the pieces decode as they would alone."""
    if not text.endswith(b"\n"):
        text += b"\n"
    lines = text.decode("utf-8", "surrogateescape")
    if "\r" in lines:
        lines = re.sub("\r+\n", "\n", lines)
    return lines[1:-1].split("\n>")


def _first_words(headers: list[str], text: bytes) -> list[str]:
    """The name of each header (see _first_word); ``text``: the header lines' bytes. In ASCII
    without the separators 0x1c-0x1f, str.split's blanks are ASCII's, so the names are split
    straight from the decoded headers."""
    if text.isascii() and not any(sep in text for sep in (b"\x1c", b"\x1d", b"\x1e", b"\x1f")):
        return [(h.split(None, 1) or [""])[0] for h in headers]
    return [_first_word(h) for h in headers]


def _first_word(header: str) -> str:
    """A record's name: the header's first word, split at ASCII blanks only, as FAMSA, MAFFT
    and the scorer (read_aligned_fasta) split it; U+00A0 or U+2028 are part of a name, not
    blanks (str.split took them for blanks: a header of one no-break space had no name, and
    'a', no-break space, 'b' was named 'a')."""
    words = header.encode("utf-8", "surrogateescape").split(None, 1)
    return words[0].decode("utf-8", "surrogateescape") if words else ""


def _line_of(buf: np.ndarray, pos: int) -> int:
    """1-based line number of byte ``pos``."""
    return int(np.count_nonzero(buf[:pos] == _NL)) + 1


def describe_byte(byte: int) -> str:
    """A byte as an error message shows it."""
    if 33 <= byte < 127:
        return f"the character {chr(byte)!r}"
    return f"the byte 0x{byte:02x}"


def header_bytes(descriptions: Sequence[str]) -> list[bytes]:
    """``>header\\n`` for each record, its bytes exactly as they were read."""
    return [f">{d}\n".encode("utf-8", "surrogateescape") for d in descriptions]


def wrapped_line(width: int, line_width: int = LINE_WIDTH) -> int:
    """Bytes of one aligned row of ``width`` columns wrapped at ``line_width``, newlines included."""
    full, rest = divmod(width, line_width)
    return full * (line_width + 1) + (rest + 1 if rest or not full else 0)


def fasta_size(header_bytes_total: int, n: int, width: int, line_width: int = LINE_WIDTH) -> int:
    """Exact bytes of an aligned FASTA file: ``n`` records of ``width`` columns whose
    ``>header\n`` lines take ``header_bytes_total`` bytes together."""
    return header_bytes_total + n * wrapped_line(width, line_width) if n else 0


def write_fasta(
    out: BinaryIO, descriptions: Sequence[str], rows: np.ndarray | RowSource, width: int = LINE_WIDTH,
    backend=None,
) -> int:
    """Write aligned rows as FASTA, lines wrapped at ``width``; the bytes written.

    ``rows`` is a uint8 array (one row per record) or anything that places the
    residues of records ``lo..hi`` into wrapped rows on demand (``place``,
    ``width``), so the row matrix need never exist. One block buffer of rows,
    already wrapped (gaps and newlines in place), is reused for every block of
    records: the residues are written into it and wiped again once the block
    is out. At 10^6 rows of 4 x 10^4 columns over 98 % of the bytes are gaps,
    so the output costs little more than its residues and the write itself.

    Into an empty regular file (the temporary file of ``-o``) the whole size is
    first checked against the free space and then reserved (``posix_fallocate``),
    so a full disk is an OSError before any byte is written, never a SIGBUS of
    the mapped writer; the mapped writer runs only on a reserved file. It fills the records on
    ``backend`` (msa.backends.Backend.fill_records; default: the CPU's threads): ``msa add`` and
    ``msa merge`` on the GPU write theirs there and so never import Numba.

    Raises:
        OSError: ENOSPC, EDQUOT or EFBIG with ``bytes_needed`` (see msa.io.output).
    """
    n = len(descriptions)
    if n == 0:
        return 0
    source = _DenseRows(rows) if isinstance(rows, np.ndarray) else rows
    template = row_template(source.width, width)
    heads = header_bytes(descriptions)
    head_len = np.fromiter((len(h) for h in heads), dtype=np.int64, count=n)
    total = fasta_size(int(head_len.sum()), n, source.width, width)
    check_space(out, total)
    fd = _empty_file(out)
    try:
        reserved = fd is not None and reserve(fd, 0, total)
        if reserved and _readable(fd) and hasattr(source, "fill"):
            if _write_mapped(fd, heads, head_len, source, width, template, total, backend):
                return total
        _write_blocks(out, heads, source, width, template)
    except OSError as exc:
        raise needing(exc, total if fd is not None else None)
    return total


def _write_blocks(out: BinaryIO, heads: list[bytes], source, width: int, template: np.ndarray) -> None:
    """The block writer: rows placed into one reused buffer, written a block at a time."""
    n, line = len(heads), len(template)
    per_block = min(n, max(1, BLOCK_BYTES // line))
    block = np.empty((per_block, line), dtype=np.uint8)
    block[:] = template
    flat = block.reshape(-1)
    view = memoryview(flat)
    for lo in range(0, n, per_block):
        hi = min(n, lo + per_block)
        source.place(flat, line, width, lo, hi)
        out.writelines([part for k, head in enumerate(heads[lo:hi]) for part in (head, view[k * line : (k + 1) * line])])
        source.place(flat, line, width, lo, hi, clear=True)


def _empty_file(out: BinaryIO) -> int | None:
    """The descriptor of ``out`` if it is an empty regular file written from its start (the
    temporary file of ``-o``, or stdout sent to a new file by the shell): one whose space can
    be reserved. Else None (a pipe, gzip, appending, a file with data)."""
    fd = regular_file(out)
    if fd is None:
        return None
    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        if flags & os.O_APPEND or os.fstat(fd).st_size != 0 or out.tell() != 0:
            return None
    except (OSError, ValueError, io.UnsupportedOperation):
        return None
    return fd


def _readable(fd: int) -> bool:
    """Whether ``fd`` is open for reading and writing, as mapping it needs."""
    return fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDWR


def _write_mapped(
    fd: int, heads: list[bytes], head_len: np.ndarray, source, width: int, template: np.ndarray, total: int,
    backend=None,
) -> bool:
    """Map the file (already ``total`` bytes, reserved) and let the source write every record
    in place on all threads: no write() copies, and the page faults are spread over the cores
    (at 10^5 rows x 10^4 columns, 1 GB: 0.6 s through write(), H200 machine). False, with
    nothing written, where the file system cannot map it."""
    head_off = np.zeros(len(heads) + 1, dtype=np.int64)
    np.cumsum(head_len, out=head_off[1:])
    rec_off = head_off[:-1] + np.arange(len(heads), dtype=np.int64) * len(template)
    head_buf = np.frombuffer(b"".join(heads), dtype=np.uint8)

    def fill(out: np.ndarray, at: np.ndarray, lo: int, hi: int) -> None:
        source.fill(out, at, head_buf, head_off[lo : hi + 1], template, width, lo, hi, backend)

    if not fill_mapped(fd, rec_off, np.append(rec_off[1:], total), fill):
        return False
    os.lseek(fd, total, os.SEEK_SET)
    return True


def row_template(columns: int, line_width: int = LINE_WIDTH) -> np.ndarray:
    """One aligned row of ``columns`` gaps wrapped at ``line_width``, newlines included: what a
    record's residues are placed into."""
    line = wrapped_line(columns, line_width)
    full = columns // line_width
    breaks = np.arange(1, full + 1, dtype=np.int64) * (line_width + 1) - 1
    if columns % line_width or not full:
        breaks = np.append(breaks, line - 1)
    template = np.full(line, ord("-"), dtype=np.uint8)
    template[breaks] = _NL
    return template


def fill_mapped(fd: int, rec_off: np.ndarray, rec_end: np.ndarray, fill: Callable[..., None]) -> bool:
    """Records at ``rec_off[k]..rec_end[k]`` (ascending, apart) of the file ``fd`` (its space
    reserved) written in place through maps of about MAP_BYTES at a time, so resident pages stay
    bounded: ``fill(window, offsets, lo, hi)`` lays out records ``lo..hi`` at their ``offsets``
    in the ``window``. The records may be some of a file's, the others written by other
    processes (one family's rows, written by the workers that aligned them: msa.run.split).
    False, with nothing written, where the file system cannot map it."""
    lo = 0
    while lo < len(rec_off):
        hi = max(lo + 1, int(np.searchsorted(rec_end, rec_off[lo] + MAP_BYTES, side="right")))
        base = int(rec_off[lo]) // mmap.ALLOCATIONGRANULARITY * mmap.ALLOCATIONGRANULARITY
        try:
            mapped = mmap.mmap(fd, int(rec_end[hi - 1]) - base, offset=base)
        except OSError:
            if lo > 0:
                raise
            return False
        with mapped:
            out = np.frombuffer(mapped, dtype=np.uint8)
            fill(out, rec_off[lo:hi] - base, lo, hi)
            del out  # the buffer export must end before the map closes
        lo = hi
    return True


class RowSource(Protocol):
    """An alignment that places a block of records' residues into wrapped rows (``msa.alignment.AlignedRows``)."""

    width: int

    def place(self, flat: np.ndarray, line: int, width: int, lo: int, hi: int, clear: bool = False) -> None: ...


class _DenseRows:
    """RowSource of a row array."""

    def __init__(self, rows: np.ndarray) -> None:
        self.rows, self.width = rows, rows.shape[1]

    def place(self, flat: np.ndarray, line: int, width: int, lo: int, hi: int, clear: bool = False) -> None:
        block = self.rows[lo:hi]
        record, column = np.nonzero(block != ord("-"))
        flat[record * line + column + column // width] = ord("-") if clear else block[record, column]
