"""Hypothesis: the Newick reader and ``msa score`` given arbitrary text and files.

The Newick reader gives a tree over the names or raises its one error type
(NewickError, a ValueError); ``msa align --tree FILE`` and ``msa score`` give a
result or one ``msa: error:`` line with exit 1, never a traceback.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("hypothesis")

from fuzz import (  # noqa: E402
    GAPS,
    any_input,
    assert_one_line_error,
    check_output,
    examples,
    invoke,
    leftovers,
    near_newick,
)
from hypothesis import event, given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from msa.scoring import score_alignments  # noqa: E402
from msa.tree.newick import NewickError, read_newick  # noqa: E402

NAMES = ["a", "b", "c d", "e'f", "g"]
FAMILY = b">a\nMKVLAAGIV\n>b\nMKVLAGIV\n>c d\nMKLAAGIVW\n>e'f\nMKVLAAGIV\n>g\nKVLAAG\n"
RECORDS = [(b"a", b"MKVLAAGIV"), (b"b", b"MKVLAGIV"), (b"c d", b"MKLAAGIVW"), (b"e'f", b"MKVLAAGIV"),
           (b"g", b"KVLAAG")]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def check_tree(tree, n: int) -> None:
    """A binary tree over leaves 0..n-1: children before parents, every node used once."""
    assert tree.n_leaves == n
    assert tree.children.shape == (max(n - 1, 0), 2) and tree.heights.shape == (max(n - 1, 0),)
    ids = tree.children.ravel()
    assert np.all(ids < np.repeat(np.arange(n, 2 * n - 1), 2)), "a child after its parent"
    assert sorted(ids.tolist()) == list(range(2 * n - 2)), "a node used twice or never"
    assert np.isfinite(tree.heights).all(), tree.heights


names_strategy = st.lists(st.sampled_from(NAMES + ["zz", ""]), min_size=0, max_size=5, unique=True)


@examples(5)
@given(text=st.one_of(st.text(max_size=60), near_newick(NAMES), near_newick(NAMES)), names=names_strategy)
def test_newick_reader_gives_a_tree_or_its_one_error(text: str, names: list[str]) -> None:
    try:
        tree = read_newick(text, names)
    except NewickError as exc:
        event("refused")
        assert str(exc) and "\n" not in str(exc)
        return
    event("tree")
    check_tree(tree, len(names))


FASTA_NAMES = ["a", "b", "c", "e'f", "g"]  # the first words of FAMILY's headers


@examples(1.5)
@given(tree=st.one_of(near_newick(FASTA_NAMES), st.binary(max_size=40).map(lambda b: b.decode("latin-1"))),
       raw=st.booleans())
def test_align_along_any_tree_file(work: Path, tree: str, raw: bool) -> None:
    """``msa align FAMILY --tree FILE``: aligned along the tree, or one line naming the tree file."""
    (work / "in.fa").write_bytes(FAMILY)
    (work / "t.nwk").write_bytes(tree.encode("latin-1" if raw else "utf-8", "replace"))
    outcome = invoke("align", str(work / "in.fa"), "--tree", str(work / "t.nwk"), "--device", "cpu", "-q",
                     "-o", str(work / "out.fa"))
    assert not leftovers(work, {"in.fa", "t.nwk", "out.fa"})
    out = work / "out.fa"
    if outcome.code == 0:
        event("aligned")
        check_output(out.read_bytes(), RECORDS)
        out.unlink()
        return
    event("refused")
    line = assert_one_line_error(outcome)
    assert "t.nwk" in line, line
    assert not out.exists()


@st.composite
def aligned_fasta(draw) -> bytes:
    """An aligned-FASTA-like file: rows over a few names with gaps of every scorer's kind, case
    mixed or not, widths equal or not; maybe damaged."""
    names = draw(st.lists(st.sampled_from(["a", "b", "c", "a b", "\xe9", "d\xa0e"]), max_size=4))
    width = draw(st.integers(0, 12))
    lines = []
    for name in names:
        w = width if draw(st.integers(0, 5)) else draw(st.integers(0, 12))
        row = draw(st.lists(st.sampled_from(list(b"ACDKLMacdk") + list(GAPS + b"~+#*X1 ")), min_size=w, max_size=w))
        lines.append(b">" + name.encode() + b"\n" + bytes(row))
    data = b"\n".join(lines) + (b"\n" if draw(st.booleans()) else b"")
    if draw(st.integers(0, 4)) == 0:
        data = data.replace(b"\n", draw(st.sampled_from([b"\r\n", b"\r"])))
    return data


@st.composite
def gapped_pair(draw) -> tuple[bytes, bytes]:
    """A test and a reference alignment of the same sequences (gaps placed independently,
    case changed now and then, rows dropped or added in the test); maybe damaged."""
    n = draw(st.integers(1, 5))
    seqs = [draw(st.text("ACDEKLMWacdek", min_size=1, max_size=10)) for _ in range(n)]

    def rows(upper_only: bool) -> list[str]:
        width = max(map(len, seqs)) + draw(st.integers(0, 4))
        out = []
        for seq in seqs:
            cols = sorted(draw(st.permutations(range(width)))[: len(seq)])
            row = ["-"] * width
            for c, ch in zip(cols, seq):
                row[c] = ch.upper() if upper_only else ch
            out.append("".join(row))
        return out

    ref = rows(draw(st.booleans()))
    test = rows(draw(st.booleans()))
    names = [f"s{i}" for i in range(n)]
    test_names = list(names)
    if draw(st.integers(0, 5)) == 0:
        test_names.append("extra")
        test.append("-" * len(test[0]))
    if draw(st.integers(0, 7)) == 0:
        del test_names[0], test[0]

    def fasta(names: list[str], rows: list[str]) -> bytes:
        return "".join(f">{name}\n{row}\n" for name, row in zip(names, rows)).encode()

    return fasta(test_names, test), fasta(names, ref)


score_input = st.one_of(aligned_fasta(), aligned_fasta(), any_input)
score_files = st.one_of(st.tuples(score_input, score_input), gapped_pair(), gapped_pair())


@examples(3)
@given(files=score_files, as_json=st.booleans())
def test_score_any_files(work: Path, files: tuple[bytes, bytes], as_json: bool) -> None:
    """``msa score TEST REF``: SP and TC in [0, 1], or one error line with exit 1."""
    test, ref = files
    (work / "test.fa").write_bytes(test)
    (work / "ref.fa").write_bytes(ref)
    outcome = invoke("score", str(work / "test.fa"), str(work / "ref.fa"), *(["--json"] if as_json else []))
    if outcome.code != 0:
        event("refused")
        assert_one_line_error(outcome)
        return
    event("scored")
    assert outcome.stderr == ""
    text = outcome.stdout.decode()
    if as_json:
        import json

        scores = json.loads(text)
        sp, tc = scores["sp"], scores["tc"]
    else:
        lines = text.splitlines()
        assert [line.split("\t")[0] for line in lines] == ["SP (Q)", "TC"], text
        sp, tc = (float(line.split("\t")[1]) for line in lines)
    assert 0.0 <= sp <= 1.0 and 0.0 <= tc <= 1.0


@examples(1)
@given(rows=st.lists(st.text("ACDEKLMW-", min_size=6, max_size=6), min_size=1, max_size=6))
def test_an_alignment_scores_one_against_itself(rows: list[str]) -> None:
    ref = {f"s{i}": row for i, row in enumerate(rows)}
    if any(not row.strip("-") for row in rows):
        return
    score = score_alignments(ref, ref)
    assert score.correct_pairs == score.ref_pairs and score.correct_columns == score.columns
    assert score.sp == (1.0 if score.ref_pairs else 0.0)
