"""--gpu-memory on a device: a capped run gives the uncapped alignment (in smaller pieces), and a
cap too small for one unit of work is one line naming a cap that works."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

EXAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "examples" / "example.fa"


@pytest.fixture(autouse=True)
def _no_pool_limit():
    """CudaBackend(memory_cap=...) sets the limit of CuPy's (process-wide) pool: lift it after."""
    yield
    import cupy

    cupy.get_default_memory_pool().set_limit(size=0)


def test_a_capped_backend_gives_the_uncapped_alignment(cuda_backend) -> None:
    import numpy as np

    from msa.backends.cuda import CudaBackend
    from msa.io import read_fasta
    from msa.params import AlignParams
    from msa.pipeline import align_db

    db = read_fasta(EXAMPLE)
    params = AlignParams(quiet=True, device="cuda")
    free = align_db(db, params, cuda_backend)
    capped = align_db(db, params, CudaBackend(memory_cap=20_000_000))  # 20 MB: many small pieces
    assert capped.width == free.width and np.array_equal(capped.columns, free.columns)


def test_levels_cut_under_a_low_limit_give_the_uncapped_alignment(cuda_backend) -> None:
    """A memory limit below a level's gathered tables cuts the level into batches (level_cuts);
    the columns stay those of the uncut run and of the CPU."""
    import numpy as np

    from msa.backends.cpu import CpuBackend
    from msa.backends.cuda import CudaBackend
    from msa.io import read_fasta
    from msa.params import AlignParams
    from msa.pipeline import align_db

    db = read_fasta(EXAMPLE)
    params = AlignParams(quiet=True)
    want = align_db(db, params, CpuBackend())
    low = CudaBackend(memory_limit=200_000)  # ~1 merge of the leaf level per piece
    pieces: list[int] = []
    cuts = low.level_cuts
    low.level_cuts = lambda w: pieces.append(len(cuts(w)) - 1) or cuts(w)
    got = align_db(db, params, low)
    assert max(pieces) > 1
    assert got.width == want.width and np.array_equal(got.columns, want.columns)
    assert np.array_equal(align_db(db, params, cuda_backend).columns, want.columns)


def test_too_small_a_cap_is_one_line_naming_a_larger_one(run_msa, tmp_path: Path) -> None:
    """The cap named is a lower bound (what was in use plus the unit that failed): retried with
    it, the run gets further or succeeds; within a few retries it succeeds, with the uncapped
    output."""
    (tmp_path / "in.fa").write_bytes(EXAMPLE.read_bytes())
    cap, caps = "0.0001", []
    for _ in range(6):
        result = run_msa("align", "in.fa", "-o", "out.fa", "--device", "cuda", "--gpu-memory", cap, cwd=tmp_path)
        if result.returncode == 0:
            break
        err = result.stderr.decode()
        assert result.returncode == 1 and err.count("\n") == 1, err
        found = re.fullmatch(
            rf"msa: error: --gpu-memory {re.escape(cap)} GB is too small for this input; "
            r"at least ([0-9.]+) GB is needed\n", err,
        )
        assert found, err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fa"]
        assert float(found.group(1)) > float(cap)
        cap = found.group(1)
        caps.append(cap)
    assert result.returncode == 0, (caps, result.stderr.decode())
    reference = run_msa("align", "in.fa", "--device", "cuda", "-q", cwd=tmp_path)
    assert (tmp_path / "out.fa").read_bytes() == reference.stdout
    print("caps named:", caps)
