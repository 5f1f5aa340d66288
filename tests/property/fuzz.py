"""Strategies and oracles the property tests share: near-FASTA bytes, valid families, Newick text.

The oracle reader here is written from the README's input rules, independently
of msa.io.fasta, so the fuzzed CLI runs are a differential test of the reader:
an input the rules accept must align, and one they refuse must fail with one
line.
"""
from __future__ import annotations

import gzip
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")  # also when collected for doctests

from hypothesis import settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from msa.alignment import check_alignment  # noqa: E402

#: Residue letters the README promises to keep: standard, lower case, '*' and U/O/J/B/Z/X.
RESIDUES = b"ACDEFGHIKLMNPQRSTVWY" + b"acdefghiklmnpqrstvwy" + b"*UOJBZXuojbzx"
STANDARD = b"ACDEFGHIKLMNPQRSTVWY"
BLANKS = b" \t\n\r\x0b\x0c"
GAPS = b"-."
#: Bytes that make a file binary in the reader's eyes (never in a text file).
BINARY = bytes([*range(0, 9), *range(14, 32), 127])
#: What hostile files are made of, beyond residues: gaps, blanks, NUL and high bytes,
#: digits, punctuation, a BOM, a gzip magic, stray '>' and quotes.
NOISE = [
    b"-", b".", b" ", b"\t", b"\r", b"\n", b"\r\n", b"\x00", b"\xff", b"\x80", b"\xc2\xa0", b"\xc2\x85",
    b"\xef\xbb\xbf", b"1", b"9", b"0", b">", b";", b"#", b"'", b"\"", b"\x1f\x8b", b"\x0b", b"\x0c",
    b"\x1b", b"\x7f", b"\xe2\x80\xa8", b"~", b"+", b"=", b"_", b"/",
]


def examples(share: float) -> settings:
    """Settings of a test that runs ``share`` of the profile's examples (the ci profile's 100
    are split by cost: cheap error paths get more, whole alignments fewer)."""
    return settings(max_examples=max(10, int(settings.default.max_examples * share)))


# ----------------------------------------------------------------------------- near-FASTA bytes

#: Text of descriptions: any character but control characters and lone surrogates.
PRINTABLE = st.characters(blacklist_categories=("Cc", "Cs"))


@st.composite
def header_lines(draw) -> bytes:
    """'>' and a header: a name (maybe empty, blank, or with odd bytes) and maybe a description."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        name = draw(st.binary(max_size=6))
    elif kind == 1:
        name = draw(st.sampled_from(
            [b"", b" ", b"\t", b"sp|P1|A_HUMAN", b"x" * 3000, b"\xc2\xa0", b"n\xffame", b"\xe2\x80\xa8"]
        ))
    else:
        name = draw(st.text(alphabet="abcXYZ019_|.-", min_size=1, max_size=12)).encode()
    if draw(st.booleans()):  # a description: any text, now and then any bytes
        odd = draw(st.integers(0, 4)) == 0
        name += b" " + draw(st.binary(max_size=20) if odd else st.text(PRINTABLE, max_size=20).map(str.encode))
    return b">" + name


@st.composite
def sequence_lines(draw) -> list[bytes]:
    """Sequence lines, mostly residues, with gaps, blanks and now and then a hostile byte."""
    lines = []
    for _ in range(draw(st.integers(0, 4) if draw(st.integers(0, 7)) == 0 else st.integers(1, 4))):
        kind = draw(st.integers(0, 19))
        if kind == 0:
            lines.append(b"")  # a blank line
        elif kind == 1:
            lines.append(draw(st.binary(max_size=10)))
        elif kind == 2:  # a very long line
            letter = draw(st.sampled_from(list(RESIDUES)))
            lines.append(bytes([letter]) * draw(st.integers(1000, 3000)))
        else:
            chunk = draw(st.lists(st.sampled_from(list(RESIDUES) + list(GAPS + b" ")), min_size=1, max_size=70))
            line = bytes(chunk)
            if draw(st.integers(0, 9)) == 0:  # a noise byte somewhere
                at = draw(st.integers(0, len(line)))
                line = line[:at] + draw(st.sampled_from(NOISE)) + line[at:]
            lines.append(line)
    return lines


@st.composite
def near_fasta(draw) -> bytes:
    """A FASTA-like file: records, line endings of one kind or mixed, a BOM, blank lines,
    maybe text before the first header, maybe gzipped (whole or cut short), maybe mutated."""
    records = draw(st.lists(st.tuples(header_lines(), sequence_lines()), max_size=6))
    newline = draw(st.sampled_from([b"\n", b"\r\n", b"\r", None]))
    lines: list[bytes] = []
    if draw(st.integers(0, 7)) == 0:
        lines.append(draw(st.sampled_from([b"", b"  ", b"MKV", b"CLUSTAL W", b";comment"])))
    for head, body in records:
        lines.append(head)
        lines.extend(body)
    if newline is None:  # mixed endings
        ends = draw(st.lists(st.sampled_from([b"\n", b"\r\n", b"\r"]), min_size=len(lines), max_size=len(lines)))
        data = b"".join(line + end for line, end in zip(lines, ends))
    else:
        data = newline.join(lines) + (newline if draw(st.booleans()) else b"")
    if draw(st.integers(0, 9)) == 0:
        data = b"\xef\xbb\xbf" + data
    for _ in range(draw(st.integers(0, 2)) if draw(st.integers(0, 3)) == 0 else 0):
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.one_of(st.sampled_from(NOISE), st.binary(min_size=1, max_size=4))) + data[at:]
    gz = draw(st.integers(0, 11))
    if gz == 0:
        data = gzip.compress(data)
    elif gz == 1:
        packed = gzip.compress(data)
        data = packed[: draw(st.integers(0, len(packed)))]
    return data


#: Any bytes, or bytes that look like FASTA.
any_input = st.one_of(st.binary(max_size=300), *[near_fasta()] * 5)


# ----------------------------------------------------------------------------- the oracle


class Refused(Exception):
    """The README's rules refuse this input."""


def oracle_read(data: bytes) -> list[tuple[bytes, bytes]]:
    """(header line, residues) of each record as the README's input rules read ``data``.

    Raises:
        Refused: the rules say the input is an error (empty, binary, not FASTA, a header
            without a name, a bad character, a record without residues, damaged gzip).
    """
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            raise Refused("damaged gzip") from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data:
        raise Refused("empty")
    if any(b in BINARY for b in data):
        raise Refused("binary")
    if b"\r" in data and b"\n" not in data:
        data = data.replace(b"\r", b"\n")
    records: list[tuple[bytes, bytearray]] = []
    for line in data.split(b"\n"):
        if line.startswith(b">"):
            header = line[1:].rstrip(b"\r")
            if not header.split():
                raise Refused("header without a name")
            records.append((header, bytearray()))
            continue
        if not records:
            if line.strip(BLANKS):
                raise Refused("text before the first header")
            continue
        for byte in line:
            if byte in BLANKS or byte in GAPS:
                continue
            if not (65 <= byte <= 90 or 97 <= byte <= 122 or byte == 42):
                raise Refused("not a residue")
            records[-1][1].append(byte)
    if not records:
        raise Refused("no header")
    if any(not seq for _, seq in records):
        raise Refused("record without residues")
    return [(header, bytes(seq)) for header, seq in records]


def fasta_records(out: bytes) -> list[tuple[bytes, bytes]]:
    """(header line, row) of each record of msa's FASTA output, checking the 60-column wrap."""
    assert out.endswith(b"\n"), out[-80:]
    records: list[tuple[bytes, list[bytes]]] = []
    for line in out[:-1].split(b"\n"):
        if line.startswith(b">"):
            records.append((line[1:], []))
        else:
            assert records, "output starts with a sequence line"
            records[-1][1].append(line)
    for header, lines in records:
        assert lines and all(len(line) == 60 for line in lines[:-1]) and 0 < len(lines[-1]) <= 60, header
    return [(header, b"".join(lines)) for header, lines in records]


def check_output(out: bytes, records: list[tuple[bytes, bytes]]) -> list[bytes]:
    """The invariants (msa.alignment.check_alignment) of FASTA output against the input records;
    identical input sequences must have identical rows. The rows."""
    got = fasta_records(out)
    rows = [row for _, row in got]
    check_alignment(records, [header for header, _ in got], rows)
    first: dict[bytes, bytes] = {}
    for (_, seq), row in zip(records, rows):
        assert first.setdefault(seq, row) == row, "identical sequences got different rows"
    return rows


# ----------------------------------------------------------------------------- the CLI in process


@dataclass
class Outcome:
    code: int
    stdout: bytes
    stderr: str
    exception: BaseException | None


_RUNNER = CliRunner()


def invoke(*args: str) -> Outcome:
    """``msa ARGS`` in this process (typer's CliRunner): exit code, stdout, stderr, and the
    exception that ended it (SystemExit for every exit the CLI means)."""
    from msa.cli import app

    result = _RUNNER.invoke(app, list(args), catch_exceptions=True)
    return Outcome(result.exit_code, result.stdout_bytes, result.stderr, result.exception)


def assert_one_line_error(outcome: Outcome) -> str:
    """Exit 1, nothing on stdout, exactly one ``msa: error:`` line on stderr, no traceback."""
    assert isinstance(outcome.exception, SystemExit), repr(outcome.exception)
    assert outcome.code == 1, (outcome.code, outcome.stderr)
    assert outcome.stdout == b"", outcome.stdout[:200]
    lines = outcome.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("msa: error: "), outcome.stderr
    assert outcome.stderr.endswith("\n") and "Traceback" not in outcome.stderr
    return lines[0]


def leftovers(folder: Path, keep: set[str]) -> list[str]:
    """Files of ``folder`` other than ``keep`` (temporary ``.part`` files, stray outputs)."""
    return sorted(set(os.listdir(folder)) - keep)


# ----------------------------------------------------------------------------- valid families


@st.composite
def families(draw, max_sequences: int = 40) -> list[tuple[bytes, bytes]]:
    """(header, residues) of 1..max_sequences related sequences: mutated copies of a base over a
    random alphabet (lower case, '*', U/O/J/B/Z/X among them), with duplicate names and sequences."""
    alphabet = draw(st.lists(st.sampled_from(list(RESIDUES)), min_size=1, max_size=26, unique=True))
    alphabet = bytes(alphabet)
    long = draw(st.integers(0, 7)) == 0
    base = bytes(draw(st.lists(st.sampled_from(list(alphabet)), min_size=1, max_size=1500 if long else 120)))
    n = draw(st.integers(1, max_sequences))
    records: list[tuple[bytes, bytes]] = []
    for i in range(n):
        kind = draw(st.integers(0, 9))
        if kind == 0 and records:  # a duplicate sequence, maybe under the same name
            header, seq = records[draw(st.integers(0, len(records) - 1))]
            if draw(st.booleans()):
                header = f"dup{i}".encode()
            records.append((header, seq))
            continue
        seq = bytearray(base)
        for _ in range(draw(st.integers(0, 6))):
            at = draw(st.integers(0, len(seq)))
            op = draw(st.integers(0, 2))
            piece = bytes(draw(st.lists(st.sampled_from(list(alphabet)), min_size=1, max_size=8)))
            if op == 0:
                seq[at:at] = piece
            elif op == 1:
                del seq[at : at + len(piece)]
            else:
                seq[at : at + len(piece)] = piece
        if not seq:
            seq = bytearray(piece)
        name = draw(st.sampled_from([f"s{i}", "same", f"sp|P{i:05d}|X_HUMAN", f"n{i} with a description"]))
        records.append((name.encode(), bytes(seq)))
    return records


@st.composite
def family_files(draw, max_sequences: int = 40) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """A family and its FASTA bytes: any line ending, wrap width (or one long line), blank
    lines, gaps sprinkled in, a BOM now and then."""
    records = draw(families(max_sequences))
    newline = draw(st.sampled_from([b"\n", b"\r\n", b"\r"]))
    width = draw(st.sampled_from([60, 80, 7, 100_000]))
    lines = []
    for header, seq in records:
        lines.append(b">" + header)
        if draw(st.integers(0, 4)) == 0:
            at = draw(st.integers(0, len(seq)))
            seq = seq[:at] + draw(st.sampled_from([b"-", b"...", b"--", b" "])) + seq[at:]
        lines.extend(seq[k : k + width] for k in range(0, len(seq), width))
        if draw(st.integers(0, 4)) == 0:
            lines.append(b"")
    data = newline.join(lines) + newline
    if draw(st.integers(0, 9)) == 0:
        data = b"\xef\xbb\xbf" + data
    return data, records


# ----------------------------------------------------------------------------- Newick


def newick_name(name: str) -> str:
    """A leaf label: plain, or quoted ('' for a quote) where it has blanks or punctuation."""
    if name and not any(c in name for c in " \t\n()[]':;,"):
        return name
    return "'" + name.replace("'", "''") + "'"


@st.composite
def near_newick(draw, names: list[str]) -> str:
    """Newick-like text over ``names`` and strangers: a well-formed tree over all of them
    (multifurcations, branch lengths good and bad, comments, internal labels), now and then
    damaged; or a soup of Newick tokens (unbalanced, unclosed quotes and comments, no ';')."""
    pieces = ["(", ")", ",", ":", ";", "[", "]", "'", " ", "\n", "0.5", "-1", "1e999", "nan", "x", "''", "[c]"]
    if draw(st.integers(0, 3)) == 0:
        soup = st.one_of(st.sampled_from([newick_name(n) for n in names] + ["zz"]), st.sampled_from(pieces))
        return "".join(draw(st.lists(soup, max_size=40)))
    leaves = list(names) + draw(st.lists(st.sampled_from(["zz", "y", ""]), max_size=2))
    leaves = [newick_name(n) for n in draw(st.permutations(leaves))] or ["zz"]
    lengths = [":1", ":0.25", "", ":2e-3", ":-2"]
    while len(leaves) > 1:
        k = draw(st.integers(0, len(leaves) - 2))
        arity = draw(st.integers(2, min(3, len(leaves) - k)))
        label = draw(st.sampled_from(["", "", "95", "'in ner'", "[note]"]))
        length = draw(st.sampled_from(lengths))
        leaves[k : k + arity] = [f"({','.join(leaves[k : k + arity])}){label}{length}"]
    text = leaves[0] + draw(st.sampled_from([";", ";", ";\n", " ; ", ""]))
    if draw(st.integers(0, 2)) == 0:  # damage: a token in, a slice out, or a bad length
        at = draw(st.integers(0, len(text)))
        damage = draw(st.one_of(st.sampled_from(pieces + [":x", ":inf", ":nan", ";;", "((", "'open"]),
                                st.text(max_size=3)))
        text = text[:at] + damage + text[at + draw(st.integers(0, 3)):]
    return text
