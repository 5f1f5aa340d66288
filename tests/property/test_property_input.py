"""Hypothesis: any input bytes align with every invariant holding or end in one error line;
random valid families always align with every invariant holding (CLI and msa.align).

The CLI runs in this process (typer's CliRunner on ``msa.cli:app``), so an example
costs milliseconds plus its alignment; tests/conftest.py's ``ci`` profile fixes the
number of examples and the seed.
"""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("hypothesis")

from fuzz import (  # noqa: E402
    Refused,
    any_input,
    assert_one_line_error,
    check_output,
    examples,
    family_files,
    families,
    invoke,
    leftovers,
    oracle_read,
)
from hypothesis import event, given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from msa.alignment import check_alignment  # noqa: E402

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """One folder for every example (Hypothesis reruns a test body, not its fixtures)."""
    return tmp_path_factory.mktemp("fuzz")


def _run(work: Path, data: bytes, to_file: bool, *extra: str):
    """``msa align in.fa [-o out.fa]``; the outcome and the output bytes (file or stdout)."""
    (work / "in.fa").write_bytes(data)
    out = work / "out.fa"
    args = ["align", str(work / "in.fa"), "--device", "cpu", "-q", *extra]
    if to_file:
        args += ["-o", str(out)]
    outcome = invoke(*args)
    written = out.read_bytes() if out.exists() else None
    if to_file:
        assert outcome.stdout == b""
    stray = leftovers(work, {"in.fa", "out.fa"})
    out.unlink(missing_ok=True)
    assert not stray, f"left behind: {stray}"
    return outcome, (written if to_file else outcome.stdout)


@examples(4)
@given(data=any_input, to_file=st.booleans())
def test_any_bytes_align_or_fail_with_one_line(work: Path, data: bytes, to_file: bool) -> None:
    """Aligned with every invariant, exactly when the README's rules accept the input; else one
    ``msa: error:`` line, exit 1, no traceback and no file."""
    outcome, written = _run(work, data, to_file)
    try:
        records = oracle_read(data)
    except Refused as why:
        event(f"refused: {why}")
        line = assert_one_line_error(outcome)
        assert written is None or written == b"", f"output written for a refused input ({why})"
        assert str(work / "in.fa") in line or "stdin" in line, line
        return
    event("aligned")
    assert outcome.code == 0, (outcome.stderr, outcome.exception)
    assert outcome.stderr == ""
    check_output(written, records)
    # msa score reads what msa align writes: the output scores 1 against itself, or (duplicate
    # names, lower-case letters under upper-case ones) one error line.
    (work / "out.fa").write_bytes(written)
    scored = invoke("score", str(work / "out.fa"), str(work / "out.fa"))
    (work / "out.fa").unlink()
    if scored.code:
        assert_one_line_error(scored)
        names = [h.split()[0] for h, _ in records]
        assert len(set(names)) < len(names) or any(chr(b).islower() for _, s in records for b in s), scored.stderr
    else:
        assert scored.stdout.split(b"\n")[0] in (b"SP (Q)\t1.0000", b"SP (Q)\t0.0000"), scored.stdout


@examples(1.5)
@pytest.mark.parametrize("device", DEVICES)
@given(family=family_files(), to_file=st.booleans())
def test_valid_families_keep_the_invariants_through_the_cli(
    work: Path, device: str, family: tuple[bytes, list[tuple[bytes, bytes]]], to_file: bool
) -> None:
    data, records = family
    outcome, written = _run(work, data, to_file, "--device", device)
    assert outcome.code == 0, (outcome.stderr, outcome.exception)
    check_output(written, records)


@examples(1.5)
@pytest.mark.parametrize("device", DEVICES)
@given(records=families(), keep_duplicates=st.booleans())
def test_valid_families_keep_the_invariants_through_the_api(
    device: str, records: list[tuple[bytes, bytes]], keep_duplicates: bool
) -> None:
    import msa

    pairs = [(header.split()[0].decode(), seq.decode()) for header, seq in records]
    aln = msa.align(pairs, device=device, quiet=True, keep_duplicates=keep_duplicates)
    names = [record.id for record in aln.sequences]
    rows = [str(aln[i]).encode() for i in range(len(pairs))]
    check_alignment([(name.encode(), seq) for name, seq in [(n, s.encode()) for n, s in pairs]],
                    [n.encode() for n in names], rows)
    if not keep_duplicates:
        first: dict[bytes, bytes] = {}
        for (_, seq), row in zip(records, rows):
            assert first.setdefault(seq, row) == row
