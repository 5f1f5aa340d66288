"""FASTA records written on the GPU (kernels/records.cu) against msa.backends.cpu.records.fill_records, the CPU
oracle, on fresh random records; and `msa add` / `msa merge` on the GPU, which write their
output there and import no Numba, byte for byte as on the CPU."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from msa.backends.cpu.records import fill_records
from msa.seqdb import _ranges

REPO = Path(__file__).resolve().parents[2]
LETTERS = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)


def _records(rng, n_seqs: int, n_records: int, width: int, line_width: int, lead: int):
    """Arguments of fill_records for a window whose first record starts ``lead`` bytes in:
    random sequences (sorted distinct columns), headers of random lengths, records that name
    sequences in any order and more than once (an alignment's duplicates)."""
    lengths = rng.integers(0, min(width, 300) + 1, n_seqs)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    columns = np.concatenate([np.sort(rng.choice(width, k, replace=False)) for k in lengths]).astype(np.int64)
    letters = LETTERS[rng.integers(0, 20, int(offsets[-1]))]
    ids = rng.integers(0, n_seqs, n_records).astype(np.int64)
    line = width + -(-width // line_width)
    template = np.full(line, ord("-"), dtype=np.uint8)
    template[np.minimum(np.arange(1, -(-width // line_width) + 1) * (line_width + 1) - 1, line - 1)] = ord("\n")
    head_len = rng.integers(2, 40, n_records)
    head_off = np.concatenate(([0], np.cumsum(head_len))).astype(np.int64)
    heads = rng.integers(33, 127, int(head_off[-1])).astype(np.uint8)
    rec_off = lead + head_off[:-1] + np.arange(n_records, dtype=np.int64) * line
    size = int(rec_off[-1] + head_len[-1] + line)
    return size, (rec_off, heads, head_off, template, line_width, ids, offsets, columns, letters)


@pytest.mark.parametrize("seed", range(4))
def test_fill_records_equals_cpu(cuda_backend, seed):
    rng = np.random.default_rng(500 + seed)
    width = int(rng.choice([1, 59, 60, 61, 700, 2500]))
    size, args = _records(rng, int(rng.integers(1, 300)), int(rng.integers(1, 400)), width, 60, int(rng.integers(0, 5000)))
    want = np.full(size, 7, dtype=np.uint8)  # bytes before the window's first record stay as they are
    got = want.copy()
    fill_records(want, *args)
    cuda_backend.fill_records(got, *args)
    np.testing.assert_array_equal(got, want)


def test_fill_records_window_of_a_larger_head_buffer(cuda_backend):
    """A later window: head_off indexes into the whole output's header bytes, ids a part of the sequences."""
    rng = np.random.default_rng(520)
    size, (rec_off, heads, head_off, template, line_width, ids, offsets, columns, letters) = _records(rng, 50, 80, 130, 60, 0)
    lo, hi = 30, 70
    base = int(rec_off[lo]) - 11
    window = (rec_off[lo:hi] - base, heads, head_off[lo : hi + 1], template, line_width, ids[lo:hi], offsets, columns, letters)
    want = np.zeros(int(rec_off[hi]) - base, dtype=np.uint8)
    got = want.copy()
    fill_records(want, *window)
    cuda_backend.fill_records(got, *window)
    np.testing.assert_array_equal(got, want)


def test_fill_records_out_of_memory_falls_back_to_the_cpu(cuda_backend, monkeypatch):
    import cupy

    rng = np.random.default_rng(530)
    size, args = _records(rng, 20, 30, 200, 60, 3)
    want = np.zeros(size, dtype=np.uint8)
    fill_records(want, *args)

    def no_memory(*a, **k):
        raise cupy.cuda.memory.OutOfMemoryError(1 << 40, 0)

    monkeypatch.setattr(cupy, "empty", no_memory)
    got = np.zeros(size, dtype=np.uint8)
    cuda_backend.fill_records(got, *args)
    np.testing.assert_array_equal(got, want)


def _fasta(path: Path, rng, n: int, prefix: str) -> Path:
    root = LETTERS[rng.integers(0, 20, 120)]
    lines = []
    for i in range(n):
        seq = root.copy()
        hit = rng.random(len(seq)) < 0.3
        seq[hit] = LETTERS[rng.integers(0, 20, int(hit.sum()))]
        seq = seq[rng.random(len(seq)) > 0.05]
        lines.append(f">{prefix}{i} some description {i}\n{seq.tobytes().decode()}\n")
    path.write_text("".join(lines))
    return path


ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}


def _run(args: list[str], cwd: Path) -> tuple[bytes, str]:
    """`msa ARGS` in a fresh process: its output file's bytes and whether Numba was imported."""
    code = (
        "import sys\nfrom msa.__main__ import main\nsys.argv = ['msa'] + sys.argv[1:]\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "print('numba' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, timeout=600,
                         env=ENV)
    assert run.returncode == 0, run.stderr.decode()
    return (cwd / "out.fa").read_bytes(), run.stdout.decode().strip()


@pytest.mark.parametrize("command", ["add", "add-keep", "merge"])
def test_add_and_merge_on_the_gpu_write_as_the_cpu_without_numba(tmp_path: Path, command: str):
    rng = np.random.default_rng(540)
    a = _fasta(tmp_path / "a.fa", rng, 300, "a")
    b = _fasta(tmp_path / "b.fa", rng, 200, "b")
    for name, src in (("a.aln", a), ("b.aln", b)):
        subprocess.run([sys.executable, "-m", "msa", "align", str(src), "-o", name, "-q", "--device", "cpu"],
                       cwd=tmp_path, check=True, env=ENV)
    args = {"add": ["add", "a.aln", "b.fa"], "add-keep": ["add", "a.aln", "b.fa", "--keep-length"],
            "merge": ["merge", "a.aln", "b.aln"]}[command] + ["-o", "out.fa", "-q"]
    cpu, _ = _run(args + ["--device", "cpu"], tmp_path)
    gpu, numba = _run(args + ["--device", "cuda"], tmp_path)
    assert gpu == cpu
    assert numba == "False"
