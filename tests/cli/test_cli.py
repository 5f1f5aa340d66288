"""The ``msa`` command through a real subprocess: exit codes, one-line errors, clean stdout.

Aligner runs are kept few (each pays the Numba start-up); the error paths stop
before the aligner is imported and are cheap.
"""
from __future__ import annotations

import gzip
import io
import json
import os
from pathlib import Path

import pytest
from Bio import Align

from msa.alignment import check_alignment
from msa.io import parse_fasta

BASE = "MKVLAAGIVGLLLAQPTRSWEHNDCYFGKIVLSTRAEQMPWHDNYKCFGAVLITRSPEQWHMNDKYCFGAIVLTR"

#: A small family with what users throw at aligners: CRLF endings, a very long
#: line, lower case, U and '*', input gaps, duplicate names and sequences.
FAMILY = "\r\n".join(
    [
        ">sp|P01|ONE first protein, kept exactly ",
        BASE[:60],
        BASE[60:],
        ">two",
        BASE[:20].lower() + "--" + BASE[25:] + "U",
        ">dup",
        BASE[3:40] + "*" + BASE[40:],
        ">dup  same name, other sequence",
        ("W" + BASE[:70]) * 9,  # one line of 639 residues
        ">five",
        BASE[:30] + "..." + BASE[34:],
        ">six copy of one",
        BASE,
        "",
    ]
).encode()

#: For the format round trips: names short and unique (PHYLIP keeps 10
#: characters, Clustal readers merge repeated names) and no '*' (A2M).
PLAIN = "\n".join(f">s{i}\n{BASE[i:70 + 2 * i]}" for i in range(5)).encode() + b"\n"


def expected_records(data: bytes) -> list[tuple[str, bytes]]:
    """(header line, residues) per input record, read independently of msa."""
    records: list[tuple[str, bytes]] = []
    for line in data.replace(b"\r\n", b"\n").split(b"\n"):
        if line.startswith(b">"):
            records.append((line[1:].decode(), b""))
        elif records:
            records[-1] = (records[-1][0], records[-1][1] + line.replace(b"-", b"").replace(b".", b""))
    return records


def fasta_rows(text: bytes) -> list[tuple[str, bytes]]:
    """(header line, row) per record of FASTA output, checking the 60-column wrap."""
    records: list[tuple[str, list[bytes]]] = []
    for line in text.split(b"\n")[:-1]:
        if line.startswith(b">"):
            records.append((line[1:].decode(), []))
        else:
            records[-1][1].append(line)
    for _, lines in records:
        assert all(len(line) == 60 for line in lines[:-1]) and 0 < len(lines[-1]) <= 60
    return [(header, b"".join(lines)) for header, lines in records]


def check_output(out: bytes, data: bytes) -> list[bytes]:
    """Headers, order and residues exactly as input, all rows one width (msa.alignment's checker); the rows."""
    got = fasta_rows(out)
    rows = [row for _, row in got]
    check_alignment(expected_records(data), [h for h, _ in got], rows)
    return rows


def one_line_error(result) -> str:
    err = result.stderr.decode()
    assert result.returncode != 0
    assert result.stdout == b""
    assert err.startswith("msa: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


@pytest.fixture(scope="module")
def family_run(run_msa, tmp_path_factory) -> bytes:
    cwd = tmp_path_factory.mktemp("family")
    (cwd / "family.fa").write_bytes(FAMILY)
    result = run_msa("align", "family.fa", "--device", "cpu", cwd=cwd)
    assert result.returncode == 0, result.stderr.decode()
    assert "Traceback" not in result.stderr.decode()
    return result.stdout


def test_align_to_stdout_keeps_names_order_and_residues(family_run: bytes) -> None:
    rows = check_output(family_run, FAMILY)
    assert rows[0] == rows[5]  # a duplicate sequence gets the same row


def test_stdin_gzip_in_gzip_out_and_tree_out(run_msa, tmp_path: Path, family_run: bytes) -> None:
    result = run_msa(
        "align", "-", "-o", "out.fa.gz", "--tree-out", "guide.nwk", "--quiet", "--device", "cpu",
        cwd=tmp_path, stdin=gzip.compress(FAMILY),
    )
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"" and result.stderr == b""
    assert gzip.decompress((tmp_path / "out.fa.gz").read_bytes()) == family_run
    newick = (tmp_path / "guide.nwk").read_text()
    assert newick.rstrip().endswith(";") and "five" in newick
    assert sorted(os.listdir(tmp_path)) == ["guide.nwk", "out.fa.gz"]


@pytest.fixture(scope="module")
def plain_dir(run_msa, tmp_path_factory) -> Path:
    cwd = tmp_path_factory.mktemp("plain")
    (cwd / "plain.fa").write_bytes(PLAIN)
    return cwd


@pytest.mark.parametrize("fmt", ["fasta", "clustal", "stockholm", "phylip", "a2m"])
def test_each_format_reads_back_through_biopython(run_msa, plain_dir: Path, fmt: str) -> None:
    result = run_msa("align", "plain.fa", "--format", fmt, "-q", "--device", "cpu", cwd=plain_dir)
    assert result.returncode == 0, result.stderr.decode()
    aln = Align.read(io.StringIO(result.stdout.decode()), fmt)
    rows = [str(row).upper() for row in aln]
    assert [s.id for s in aln.sequences] == [f"s{i}" for i in range(5)]
    assert [r.replace("-", "") for r in rows] == [seq.decode() for _, seq in expected_records(PLAIN)]
    assert len({len(r) for r in rows}) == 1


def test_a3m_output_gives_the_input_back_and_reads_as_the_alignment(run_msa, plain_dir: Path) -> None:
    from msa.io.formats import read_alignment

    result = run_msa("align", "plain.fa", "--format", "a3m", "-o", "plain.a3m", "-q", "--device", "cpu",
                     cwd=plain_dir)
    assert result.returncode == 0, result.stderr.decode()
    lines = (plain_dir / "plain.a3m").read_bytes().split(b"\n")[:-1]
    seqs = lines[1::2]
    inputs = [seq for _, seq in expected_records(PLAIN)]
    assert [s.replace(b"-", b"").upper() for s in seqs] == inputs
    assert b"-" not in seqs[0] and seqs[0].isupper()  # the query: every column of it a match column
    assert len({sum(not chr(c).islower() for c in s) for s in seqs}) == 1  # one count of match states
    back = read_alignment(str(plain_dir / "plain.a3m"))
    check_alignment(list(zip([f"s{i}" for i in range(5)], inputs)), back.names,
                    [r.tobytes().upper() for r in back.rows])


def test_single_sequence_is_its_own_alignment(run_msa, tmp_path: Path) -> None:
    (tmp_path / "one.fa").write_bytes(b">only one\nMKV-LA*\n")
    result = run_msa("align", "one.fa", "-q", "--device", "cpu", cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b">only one\nMKVLA*\n"


def test_tree_command_then_align_along_the_tree(run_msa, plain_dir: Path) -> None:
    result = run_msa("tree", "plain.fa", "-o", "plain.nwk", "-q", "--device", "cpu", cwd=plain_dir)
    assert result.returncode == 0, result.stderr.decode()
    newick = (plain_dir / "plain.nwk").read_text()
    assert newick.endswith(";\n") and all(f"s{i}" in newick for i in range(5))
    result = run_msa("align", "plain.fa", "--tree", "plain.nwk", "-q", "--device", "cpu", cwd=plain_dir)
    assert result.returncode == 0, result.stderr.decode()
    check_output(result.stdout, PLAIN)


@pytest.mark.parametrize("split", [["sample", "lcs"], ["picks", "kmer"]])
def test_parttree_splits_from_the_command_line(run_msa, tmp_path: Path, split: list[str]) -> None:
    """Both PartTree variants (FAMSA-style sampled LCS split, MAFFT's 6-mer picks) align every record."""
    (tmp_path / "family.fa").write_bytes(FAMILY)
    result = run_msa(
        "align", "family.fa", "--tree", "parttree", "--exact-tree-max", "4", "--partsize", "4",
        "--parttree-split", split[0], "--parttree-distance", split[1], "-q", "--device", "cpu", cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr.decode()
    check_output(result.stdout, FAMILY)


def test_score_plain_and_json(run_msa, tmp_path: Path) -> None:
    (tmp_path / "ref.fa").write_bytes(b">a\nMK-V\n>b\nMKLV\n")
    (tmp_path / "test.fa").write_bytes(b">a\nMKV-\n>b\nMKLV\n")
    plain = run_msa("score", "test.fa", "ref.fa", cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr.decode()
    assert plain.stdout.decode().splitlines() == ["SP (Q)\t0.6667", "TC\t0.6667"]
    result = run_msa("score", "test.fa", "ref.fa", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    scores = json.loads(result.stdout)
    assert scores["correct_pairs"] == 2 and scores["ref_pairs"] == 3


BAD_INPUTS = {
    "empty": (b"", "empty input"),
    "blank": (b"\n\n  \n", "empty input"),
    "not_fasta": (b"CLUSTAL W (1.83) multiple sequence alignment\n\nseq1  MKV\n", "not FASTA"),
    "binary": (bytes(range(256)) * 4, "binary data"),
    "digits": (b">a\nMKV\n>b\nMK\n12V\n", "line 5: record 'b' has the character '1'"),
    "punctuation": (b">a\nMK;V\n", "the character ';'"),
    "empty_sequence": (b">a\nMKV\n>b\n>c\nMKV\n", "line 3: record 'b' has no residues"),
    "only_gaps": (b">a\nMKV\n>b\n----\n", "record 'b' has no residues"),
    "damaged_gzip": (gzip.compress(FAMILY)[:40], "damaged gzip"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_and_leaves_no_file(run_msa, tmp_path: Path, case: str) -> None:
    data, message = BAD_INPUTS[case]
    (tmp_path / "in.fa").write_bytes(data)
    err = one_line_error(run_msa("align", "in.fa", "-o", "out.fa", cwd=tmp_path))
    assert message in err and "in.fa" in err
    assert os.listdir(tmp_path) == ["in.fa"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["align", "missing.fa"], "missing.fa: No such file or directory"),
        (["align", "."], "Is a directory (to align the files in it, give -O/--output-dir DIR)"),
        (["align", "ok.fa", "-o", "no/such/dir/out.fa"], "no/such/dir/out.fa: No such file or directory"),
        (["align", "ok.fa", "--tree", "fancy"], "--tree 'fancy'"),
        (["align", "ok.fa", "--tree", "absent.nwk"], "absent.nwk"),
        (["align", "ok.fa", "--matrix", "NOPE"], "unknown matrix 'NOPE'"),
        (["score", "ok.fa", "missing.fa"], "missing.fa"),
    ],
)
def test_usage_errors_are_one_line(run_msa, tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "ok.fa").write_bytes(b">a\nMKV\n>b\nMKLV\n")
    err = one_line_error(run_msa(*args, cwd=tmp_path))
    assert message in err
    assert os.listdir(tmp_path) == ["ok.fa"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["align", "ok.fa", "--no-such-option"], "No such option: --no-such-option"),
        (["align", "ok.fa", "--threads", "many"], "Invalid value for '--threads' / '-t'"),
        (["score", "ok.fa"], "Missing argument 'REF'"),
        (["realign"], "No such command 'realign'"),
    ],
)
def test_command_line_mistakes_are_one_line_with_exit_2(run_msa, tmp_path: Path, args: list[str], message: str) -> None:
    """Click's usage errors: one line naming the help, exit 2 (the convention of click and GNU tools)."""
    (tmp_path / "ok.fa").write_bytes(b">a\nMKV\n>b\nMKLV\n")
    result = run_msa(*args, cwd=tmp_path)
    err = one_line_error(result)
    assert result.returncode == 2
    assert err.startswith(f"msa: error: {message}") and err.endswith(f" (see 'msa {args[0]} -h')\n".replace(" realign", "")), err
    assert os.listdir(tmp_path) == ["ok.fa"]


@pytest.mark.parametrize("command", ["align", "tree"])
def test_o_naming_a_directory_names_the_fix(run_msa, tmp_path: Path, command: str) -> None:
    (tmp_path / "ok.fa").write_bytes(b">a\nMKV\n>b\nMKLV\n")
    (tmp_path / "out").mkdir()
    err = one_line_error(run_msa(command, "ok.fa", "-o", "out", cwd=tmp_path))
    fix = "use -O DIR for one output per input" if command == "align" else "name a file to write"
    assert err == f"msa: error: out: is a directory; {fix}\n"
    assert sorted(os.listdir(tmp_path)) == ["ok.fa", "out"] and not os.listdir(tmp_path / "out")


def test_version(run_msa, tmp_path: Path) -> None:
    import msa

    result = run_msa("--version", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.decode() == f"msa {msa.__version__}\n"
    assert os.listdir(tmp_path) == []


def test_device_cuda_without_gpu_is_one_line(run_msa, tmp_path: Path) -> None:
    from msa.backends import _cuda_unavailable_reason

    if _cuda_unavailable_reason() is None:
        pytest.skip("a GPU is present")
    (tmp_path / "ok.fa").write_bytes(b">a\nMKV\n>b\nMKLV\n")
    err = one_line_error(run_msa("align", "ok.fa", "-o", "out.fa", "--device", "cuda", cwd=tmp_path))
    assert "--device cuda" in err
    assert os.listdir(tmp_path) == ["ok.fa"]


def test_reader_agrees_with_the_test_helper() -> None:
    """The independent helper above reads FAMILY as msa does (guards the helper itself)."""
    db = parse_fasta(FAMILY)
    assert [(d, db.sequence(i)) for i, d in enumerate(db.descriptions)] == expected_records(FAMILY)
