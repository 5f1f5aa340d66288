"""``msa align IN... -O DIR``: many families in one run, each output identical to its single-file run."""
from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "examples" / "example.fa"

#: Good families (input name -> records of the example), each its own size; the names test the output names.
GOOD = {"PF00001.100": (0, 25), "fam_b.fasta": (25, 37), "fam_c.fa.gz": (40, 46)}
OUTPUT = {"PF00001.100": "PF00001.100.fa", "fam_b.fasta": "fam_b.fa", "fam_c.fa.gz": "fam_c.fa"}
BAD = {"bad.fa": (b">x\nMK1V\n", "record 'x' has the character '1'"), "empty.fa": (b"", "empty input")}


def _records() -> list[bytes]:
    return [b">" + r for r in EXAMPLE.read_bytes().split(b">")[1:]]


def write_family(folder: Path, name: str) -> None:
    lo, hi = GOOD[name]
    data = b"".join(_records()[lo:hi])
    (folder / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)


@pytest.fixture(scope="module")
def singles(run_msa, tmp_path_factory) -> dict[str, bytes]:
    """Each good family aligned alone with -o: the bytes every many-file run must reproduce."""
    cwd = tmp_path_factory.mktemp("singles")
    out = {}
    for name in GOOD:
        write_family(cwd, name)
        result = run_msa("align", name, "-o", "single.fa", "-q", "--device", "cpu", cwd=cwd)
        assert result.returncode == 0, result.stderr.decode()
        out[name] = (cwd / "single.fa").read_bytes()
    return out


def error_lines(stderr: bytes) -> list[str]:
    return [line for line in stderr.decode().splitlines() if line.startswith("msa: error: ")]


def test_mixed_good_and_bad_files_in_a_new_nested_dir(run_msa, tmp_path: Path, singles: dict[str, bytes]) -> None:
    """A shell glob's list of files: good outputs identical to -o runs, one line per bad file, exit 1."""
    for name in GOOD:
        write_family(tmp_path, name)
    for name, (data, _) in BAD.items():
        (tmp_path / name).write_bytes(data)
    inputs = sorted([*GOOD, *BAD])
    result = run_msa("align", *inputs, "-O", "out/nested", "--device", "cpu", cwd=tmp_path)
    assert result.returncode == 1, result.stderr.decode()
    assert result.stdout == b""
    err = result.stderr.decode()
    assert "Traceback" not in err
    lines = error_lines(result.stderr)
    assert len(lines) == len(BAD) + 1, err
    for name, (_, message) in BAD.items():
        assert sum(line.startswith(f"msa: error: {name}: ") and message in line for line in lines) == 1, err
    assert lines[-1] == f"msa: error: {len(BAD)} of {len(inputs)} families failed"
    assert f"aligned {len(GOOD)} of {len(inputs)} families" in err
    out = tmp_path / "out" / "nested"
    assert sorted(os.listdir(out)) == sorted(OUTPUT.values())  # nothing for the bad ones, no temp file
    for name in GOOD:
        assert (out / OUTPUT[name]).read_bytes() == singles[name], name


def test_skip_existing_resumes_a_run(run_msa, tmp_path: Path, singles: dict[str, bytes]) -> None:
    for name in GOOD:
        write_family(tmp_path, name)
    first = run_msa("align", *GOOD, "-O", "out", "-q", "--device", "cpu", cwd=tmp_path)
    assert first.returncode == 0 and first.stderr == b"", first.stderr.decode()
    done, redo, *_ = (tmp_path / "out" / OUTPUT[name] for name in GOOD)
    done.write_bytes(b"kept as it is\n")  # an output that exists is complete: never rewritten
    os.utime(done, (1_000_000_000, 1_000_000_000))
    redo.unlink()  # as if the run had been interrupted before this one
    result = run_msa("align", *GOOD, "-O", "out", "--skip-existing", "--device", "cpu", cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    assert done.read_bytes() == b"kept as it is\n" and done.stat().st_mtime == 1_000_000_000
    assert redo.read_bytes() == singles[list(GOOD)[1]]
    assert f"aligned 1 of {len(GOOD)} families" in result.stderr.decode()
    assert f"{len(GOOD) - 1} skipped" in result.stderr.decode()


def test_a_directory_takes_its_regular_visible_files(run_msa, tmp_path: Path, singles: dict[str, bytes]) -> None:
    data = tmp_path / "in"
    data.mkdir()
    for name in GOOD:
        write_family(data, name)
    (data / ".hidden.fa").write_bytes(b">x\nMK1V\n")  # would fail if it were read
    (data / "sub").mkdir()
    (data / "sub" / "deeper.fa").write_bytes(b">x\nMK1V\n")
    result = run_msa("align", "in", "-O", "out", "-q", "--gzip", "--device", "cpu", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == b"", result.stderr.decode()
    out = tmp_path / "out"
    assert sorted(os.listdir(out)) == sorted(f"{name}.gz" for name in OUTPUT.values())
    for name in GOOD:
        assert gzip.decompress((out / f"{OUTPUT[name]}.gz").read_bytes()) == singles[name], name


def test_python_api_shares_one_backend_and_matches_single_runs(tmp_path: Path, singles: dict[str, bytes]) -> None:
    """align_files in process, families in both orders: nothing leaks from one family to the next."""
    from msa import align_files
    from msa.backends import get_backend

    for name in GOOD:
        write_family(tmp_path, name)
    backend = get_backend("cpu")
    for order, folder in ((list(GOOD), "fwd"), (list(GOOD)[::-1], "rev")):
        summary = align_files([tmp_path / n for n in order], tmp_path / folder, backend=backend, device="cpu")
        assert summary.ok and len(summary.done) == len(GOOD) and not summary.skipped
        assert [Path(r.input).name for r in summary.results] == order
        for name in GOOD:
            assert (tmp_path / folder / OUTPUT[name]).read_bytes() == singles[name], (folder, name)
    again = align_files([tmp_path / "fam_b.fasta", tmp_path / "nope.fa"], tmp_path / "fwd", skip_existing=True,
                        backend=backend, device="cpu")
    assert [r.status for r in again.results] == ["skipped", "failed"]
    assert again.failed[0].error.endswith("nope.fa: No such file or directory")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["a.fa", "b.fa", "-o", "x.fa"], "2 inputs: write one alignment each with -O/--output-dir"),
        (["a.fa", "-o", "x.fa", "-O", "out"], "-o/--output and -O/--output-dir do not go together"),
        (["a.fa", "b.fa"], "2 inputs"),
        (["a.fa", "--skip-existing"], "go with -O/--output-dir"),
        (["-", "-O", "out"], "'-' (stdin) has no name"),
        (["a.fa", "-O", "a.fa/sub"], "a.fa/sub: Not a directory"),  # cannot be made (we run as root: no chmod)
        (["a.fa", "-O", "a.fa"], "a.fa: Not a directory"),
        (["a.fa", "sub/a.fa", "-O", "out"], "a.fa and sub/a.fa would both be written to out/a.fa"),
        (["a.fa", "-O", "."], "its output ./a.fa would replace it"),
        (["a.fa", "-O", "out", "--tree-out", "t.nwk"], "--tree-out takes one input"),
    ],
)
def test_usage_errors_are_one_line_before_any_work(run_msa, tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "a.fa").write_bytes(b">a\nMKV\n>b\nMKLV\n")
    (tmp_path / "b.fa").write_bytes(b">a\nMKV\n>b\nMKLV\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.fa").write_bytes(b">a\nMKV\n")
    result = run_msa("align", *args, "--device", "cpu", cwd=tmp_path)
    err = result.stderr.decode()
    assert result.returncode == 1 and result.stdout == b""
    assert err.startswith("msa: error: ") and err.count("\n") == 1 and message in err, err
    assert sorted(os.listdir(tmp_path)) == ["a.fa", "b.fa", "sub"]  # no output dir made, nothing written


#: Small families besides GOOD's for the batched path: one sequence, two, duplicates, DNA (its own
#: scoring, so its own group of the batch), and a bad one.
EXTRA = {
    "one.fa": b">solo\nMKVLAAGIVGWWCH\n",
    "two.fa": b">a\nMKVLAAGIVGLLA\n>b\nMKVAAGIVGKLA\n",
    "dna.fa": b">d1\nACGTACGTTAGCAAT\n>d2\nACGTTCGTAGCAT\n>d3\nACGACGTTAGCAAT\n>d4\nACGTTCGTAGCAT\n",
    "bad.fa": b">x\nMK1V\n",
}


def write_extra(folder: Path) -> list[str]:
    records = _records()
    for name, data in EXTRA.items():
        (folder / name).write_bytes(data)
    (folder / "dups.fa").write_bytes(b"".join(records[50:56] + records[50:52] + records[53:54]))
    for name in GOOD:
        write_family(folder, name)
    return sorted([*GOOD, *EXTRA, "dups.fa"])


def test_small_families_share_launches_and_match_alone(tmp_path: Path, singles: dict[str, bytes], monkeypatch) -> None:
    """The batched path of a run (msa.pipeline.align_families): every output byte-identical to
    the family aligned alone (the -o runs for GOOD), one batch of fewer profile_align calls than
    the families' alone (the progressive stage's and the refinement's, each); budgets that cut
    it into several batches or leave families alone give the same bytes."""
    import msa.pipeline
    import msa.run
    import msa.run.local
    from msa import align_files
    from msa.backends.cpu import CpuBackend
    from msa.params import AlignParams
    from msa.run import align_file

    class Counting(CpuBackend):
        calls = refining_calls = 0  # the progressive stage's, the refinement's
        refining = False
        align_forest = None  # the level loop, as the GPU: its launches are what a batch shares

        def profile_align(self, batch):
            if Counting.refining:
                Counting.refining_calls += 1
            else:
                Counting.calls += 1
            return super().profile_align(batch)

    refine_stage = msa.pipeline.refine_stage

    def refining(*args, **kwargs):
        Counting.refining = True
        try:
            return refine_stage(*args, **kwargs)
        finally:
            Counting.refining = False

    monkeypatch.setattr(msa.pipeline, "refine_stage", refining)

    names = write_extra(tmp_path)
    alone = {}
    for name in names:
        out = tmp_path / "alone" / msa.run.output_name(name)
        out.parent.mkdir(exist_ok=True)
        result = align_file(str(tmp_path / name), str(out), AlignParams(device="cpu"), Counting())
        alone[name] = out.read_bytes() if result.status == "done" else result.error
    assert "record 'x' has the character '1'" in alone["bad.fa"]
    for name in GOOD:
        assert alone[name] == singles[name]
    (calls_alone, Counting.calls), (refining_alone, Counting.refining_calls) = (Counting.calls, 0), (Counting.refining_calls, 0)

    batches: list[int] = []
    real = msa.pipeline.align_families

    def recorded(families, backend):
        batches.append(len(families))
        return real(families, backend)

    monkeypatch.setattr(msa.pipeline, "align_families", recorded)
    # (the budgets stay set from one round to the next; PF00001.100 has 6,121 distinct residues, fam_b 2,954)
    for budget, small, want in [(None, None, [7]), (4500, None, [2, 4]), (None, 2000, [5])]:
        if budget is not None:
            monkeypatch.setattr(msa.run.local, "BATCH_RESIDUES", budget)
        if small is not None:
            monkeypatch.setattr(msa.run.local, "SMALL_FAMILY_RESIDUES", small)
        batches.clear()
        folder = tmp_path / f"out-{budget}-{small}"
        summary = align_files([tmp_path / n for n in names], folder, backend=Counting(), device="cpu")
        assert batches == want, (budget, small)
        assert [r.status for r in summary.results] == ["failed" if n == "bad.fa" else "done" for n in names]
        for name, result in zip(names, summary.results):
            if result.status == "done":
                assert Path(result.output).read_bytes() == alone[name], (budget, name)
            else:
                assert result.error == alone[name]
        if budget is None and small is None:
            assert Counting.calls < calls_alone / 2, (Counting.calls, calls_alone)
            assert Counting.refining_calls < refining_alone, (Counting.refining_calls, refining_alone)


def test_a_failing_batch_aligns_its_families_alone(tmp_path: Path, singles: dict[str, bytes]) -> None:
    """A family that fails in the batch (here an exact UPGMA tree past exact_tree_max) fails alone
    with its own line; the batch's other families are aligned alone and written as usual."""
    from msa import align_files

    for name in GOOD:
        write_family(tmp_path, name)
    names = list(GOOD)  # 25, 12 and 6 sequences
    summary = align_files([tmp_path / n for n in names], tmp_path / "out", device="cpu", guide_tree="upgma",
                          exact_tree_max=10)
    assert [r.status for r in summary.results] == ["failed", "failed", "done"]
    assert "needs the full distance matrix of 25 sequences" in summary.results[0].error
    assert summary.results[0].error.startswith(str(tmp_path / names[0]))
    single = align_files([tmp_path / names[2]], tmp_path / "single", device="cpu", guide_tree="upgma", exact_tree_max=10)
    assert Path(summary.results[2].output).read_bytes() == Path(single.results[0].output).read_bytes()
