"""``msa merge`` and ``msa add`` through a real subprocess: outputs, existing rows kept, one-line errors."""
from __future__ import annotations

from pathlib import Path

import pytest

from msa.alignment import check_alignment

from test_cli import fasta_rows, one_line_error

A = b">a1 first\nMKV-LAGIVGLLLAQ\n>a2\nMK-WLAGIVGLL-AQ\n>a3\n-KVWLAGIVG-LLAQ\n"
B = b">b1\nMKVLAG--IVGLLAQ\n>b2\n-KVLAGCCIVGLLAQ\n"
NEW = b">n1\nMKVWWLAGIVGLLAQ\n>n2\nAGIVGLL\n>n3\nMKVLAGIVGQQQQLLAQ\n"


def _files(tmp_path: Path) -> None:
    (tmp_path / "A.fa").write_bytes(A)
    (tmp_path / "B.fa").write_bytes(B)
    (tmp_path / "new.fa").write_bytes(NEW)



def _project(rows: list[bytes]) -> list[bytes]:
    cols = [c for c in range(len(rows[0])) if any(r[c] != ord("-") for r in rows)]
    return [bytes(r[c] for c in cols) for r in rows]


def test_merge_writes_a_then_b_with_each_sides_columns(run_msa, tmp_path: Path) -> None:
    _files(tmp_path)
    result = run_msa("merge", "A.fa", "B.fa", "-o", "out.fa", "-q", "--device", "cpu", cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    got = fasta_rows((tmp_path / "out.fa").read_bytes())
    a, b = fasta_rows(A), fasta_rows(B)
    check_alignment([(h.split()[0], r.replace(b"-", b"")) for h, r in a + b], [h.split()[0] for h, _ in got],
                    [r for _, r in got])
    assert [h for h, _ in got] == [h for h, _ in a + b]  # headers as read
    assert _project([r for _, r in got[:3]]) == [r for _, r in a]
    assert _project([r for _, r in got[3:]]) == _project([r for _, r in b])


@pytest.mark.parametrize("keep", [False, True])
def test_add_keeps_existing_rows(run_msa, tmp_path: Path, keep: bool) -> None:
    _files(tmp_path)
    args = ["add", "A.fa", "new.fa", "-o", "out.fa", "-q", "--device", "cpu"] + (["--keep-length"] if keep else [])
    result = run_msa(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    got = fasta_rows((tmp_path / "out.fa").read_bytes())
    a, new = fasta_rows(A), fasta_rows(NEW)
    assert [h for h, _ in got] == [h for h, _ in a + new]
    assert len({len(r) for _, r in got}) == 1
    if keep:
        assert [r for _, r in got[:3]] == [r for _, r in a]  # byte-identical
    else:
        assert _project([r for _, r in got[:3]]) == [r for _, r in a]
        assert [r.replace(b"-", b"") for _, r in got[3:]] == [r for _, r in new]


def test_add_reads_the_new_sequences_from_stdin(run_msa, tmp_path: Path) -> None:
    """The reading runs in a forked child (msa._runtime.forked), which reads stdin in the parent's place."""
    _files(tmp_path)
    result = run_msa("add", "A.fa", "-", "-o", "out.fa", "-q", "--device", "cpu", cwd=tmp_path, stdin=NEW)
    assert result.returncode == 0, result.stderr.decode()
    got = fasta_rows((tmp_path / "out.fa").read_bytes())
    assert [r.replace(b"-", b"") for _, r in got[3:]] == [r for _, r in fasta_rows(NEW)]


def test_a3m_alignment_is_read_by_add(run_msa, tmp_path: Path) -> None:
    (tmp_path / "A.a3m").write_bytes(b"#A3M\n>a1\nMKVLAGIV\n>a2\nMKwVLAGIV\n")
    (tmp_path / "new.fa").write_bytes(b">n\nMKVLAGV\n")
    result = run_msa("add", "A.a3m", "new.fa", "-q", "--device", "cpu", cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    rows = [r for _, r in fasta_rows(result.stdout)]
    assert rows[:2] == [b"MK-VLAGIV", b"MKwVLAGIV"]
    assert rows[2].replace(b"-", b"") == b"MKVLAGV"


@pytest.mark.parametrize(
    "args, files, message",
    [
        (["merge", "A.fa", "bad.fa"], {"bad.fa": b">x\nMKV\n>y\nMK\n"}, "not an alignment: record 'y'"),
        (["merge", "A.fa", "empty.fa"], {"empty.fa": b""}, "empty.fa: empty input"),
        (["add", "bad.fa", "new.fa"], {"bad.fa": b">x\nMKV\n>y\nMK\n"}, "not an alignment"),
        (["add", "A.fa", "empty.fa"], {"empty.fa": b""}, "empty.fa: empty input"),
        (["add", "A.fa", "gap.fa"], {"gap.fa": b">g\n---\n"}, "record 'g' has no residues"),
        (["merge", "A.fa", "B.fa", "--in-format", "clustal"], {}, "A.fa: not Clustal"),
    ],
)
def test_bad_inputs_are_one_line_and_leave_no_file(run_msa, tmp_path: Path, args, files, message) -> None:
    _files(tmp_path)
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    result = run_msa(*args, "-o", "out.fa", "--device", "cpu", cwd=tmp_path)
    assert message in one_line_error(result)
    assert not (tmp_path / "out.fa").exists()
    assert not list(tmp_path.glob(".out.fa.*"))


@pytest.mark.parametrize("fmt", ["fasta", "clustal", "stockholm", "phylip", "phylip-relaxed", "a2m", "a3m"])
def test_add_merge_and_score_read_every_format_msa_writes_gzipped_too(run_msa, tmp_path: Path, fmt: str) -> None:
    """An alignment msa wrote in ``fmt`` (and gzipped) is read back by add, merge and score."""
    import gzip

    (tmp_path / "in.fa").write_bytes(b">a one\nMKVLAAGIVG\n>b\nMKVLSAGIVGLL\n>c\nMKILAGIV\n")
    (tmp_path / "new.fa").write_bytes(b">n\nMKVLAGIV\n")
    for args in (["-o", "ref.fa"], ["-f", fmt, "-o", "x.aln"]):
        assert run_msa("align", "in.fa", *args, "--device", "cpu", "-q", cwd=tmp_path).returncode == 0
    (tmp_path / "x.aln.gz").write_bytes(gzip.compress((tmp_path / "x.aln").read_bytes()))
    for name in ("x.aln", "x.aln.gz"):
        scored = run_msa("score", name, "ref.fa", "--in-format", fmt, "--ref-format", "fasta", "--json", cwd=tmp_path)
        assert scored.returncode == 0, scored.stderr
        if fmt != "a3m":  # A3M's inserts come back left-justified
            assert '"sp": 1.0' in scored.stdout.decode()
        for args in (["add", name, "new.fa"], ["merge", name, name]):
            done = run_msa(*args, "--in-format", fmt, "--device", "cpu", "-q", cwd=tmp_path)
            assert done.returncode == 0, done.stderr
            assert done.stdout.count(b">") == (4 if args[0] == "add" else 6)
