"""The hybrid on the real GPU: levels on random sides, and where the model puts them, give the
CPU's bytes (tests/unit/test_hybrid.py runs the same with a fake device)."""
from __future__ import annotations

import numpy as np
import pytest

from msa.backends.cpu import CpuBackend
from msa.progressive import progressive_align_many, progressive_profiles

from tests.unit.test_hybrid import sides  # noqa: F401  (the fixture)
from tests.unit.test_progressive import MATRIX, balanced, caterpillar, check_invariants, random_db, random_families


@pytest.mark.parametrize("seed", range(3))
def test_random_sides_on_the_gpu(cuda_backend, hybrid, sides, seed) -> None:  # noqa: F811
    rng = np.random.default_rng(seed)
    dbs, trees, gaps = random_families(rng)
    want = progressive_align_many(dbs, trees, MATRIX, gaps, CpuBackend())
    got = progressive_align_many(dbs, trees, MATRIX, gaps, cuda_backend)
    assert 0 < sum(sides) < len(sides)
    for db, (columns, width), (want_columns, want_width) in zip(dbs, got, want):
        assert width == want_width
        np.testing.assert_array_equal(columns, want_columns)
        check_invariants(db, columns, width)


def test_roots_profiles_on_random_sides(cuda_backend, hybrid, sides) -> None:  # noqa: F811
    rng = np.random.default_rng(11)
    dbs = [random_db(rng, n, 5, 300) for n in (300, 170, 2)]
    trees = [caterpillar(300), balanced(170), balanced(2)]
    gaps = random_families(rng)[2][:3]
    want = progressive_profiles(dbs, trees, MATRIX, gaps, CpuBackend())
    got = progressive_profiles(dbs, trees, MATRIX, gaps, cuda_backend)
    for (c, w, t), (wc, ww, wt) in zip(got, want):
        assert w == ww
        np.testing.assert_array_equal(c, wc)
        np.testing.assert_array_equal(t, wt)


@pytest.mark.parametrize("stage", ["host", "model"])
def test_the_whole_stage_on_the_host(cuda_backend, hybrid, monkeypatch, stage) -> None:
    """A GPU run whose stage the host's one call takes gives the CPU's bytes (host columns)."""
    import msa.progressive

    monkeypatch.setattr(msa.progressive, "HOST_STAGE", stage)
    rng = np.random.default_rng(8)
    dbs, trees, gaps = random_families(rng)
    weights = [None if f % 2 else rng.integers(1, 9, len(db)) for f, db in enumerate(dbs)]
    want = progressive_align_many(dbs, trees, MATRIX, gaps, CpuBackend(), weights)
    got = progressive_align_many(dbs, trees, MATRIX, gaps, cuda_backend, weights)
    for db, (columns, width), (want_columns, want_width) in zip(dbs, got, want):
        assert width == want_width and type(columns) is np.ndarray
        np.testing.assert_array_equal(columns, want_columns)
