"""A GPU run's levels on either side (msa.progressive's hybrid): byte-identical to one side.

The device is a fake here, the CPU backend behind arrays of their own type, so that every
move between the sides, and every array that would reach the wrong side, shows on a machine
without a GPU (tests/gpu runs the real one)."""
from __future__ import annotations

import types

import numpy as np
import pytest

import msa.backends.cpu
import msa.progressive as progressive
from msa.backends.cpu import CpuBackend
from msa.profile import AlignBatch, AlignResult
from msa.progressive import progressive_align, progressive_align_many, progressive_profiles

from tests.unit.test_progressive import (
    MATRIX, balanced, caterpillar, check_invariants, random_db, random_families, random_weights,
)


class Dev(np.ndarray):
    """An array on the fake device."""


def _dev(a) -> Dev:
    return np.array(a).view(Dev)


def _plain(a) -> np.ndarray:
    assert type(a) is Dev, f"a {type(a).__name__} reached the device"
    return a.view(np.ndarray)


DEV_XP = types.SimpleNamespace(asarray=_dev, empty=lambda n, dtype: _dev(np.empty(n, dtype)),
                               zeros=lambda n, dtype: _dev(np.zeros(n, dtype)), int32=np.int32, int64=np.int64)


def _host(a) -> None:
    assert type(a) is np.ndarray, f"a {type(a).__name__} reached the host"


class FakeGpu(CpuBackend):
    """The CPU backend as a device: takes and gives Dev arrays only; cuts every level into
    pieces of at most ``per`` merges, as a small device would."""

    xp = DEV_XP
    align_forest = None  # as the GPU: a launch per level

    def __init__(self, per: int = 1_000_000) -> None:
        super().__init__()
        self.per, self.levels, self.bonus_levels = per, 0, 0

    @staticmethod
    def to_host(a) -> np.ndarray:
        return _plain(a).copy()

    def level_cuts(self, kid_widths):
        n = len(kid_widths) // 2
        return np.unique(np.append(np.arange(0, n, self.per), n))

    def gather_profiles(self, parts, part, start, widths, codes, values=None):
        used = {int(p) for p in np.unique(part) if p >= 0}
        plain = [_plain(p) if i in used else None for i, p in enumerate(parts)]
        return _dev(CpuBackend.gather_profiles(plain, part, start, widths, _plain(codes), values))

    def profile_align(self, batch: AlignBatch) -> AlignResult:
        self.levels += 1
        batch = AlignBatch(_plain(batch.counts), batch.col_offsets, batch.n_seqs, batch.matrix, batch.gaps,
                           bonus=batch.bonus)
        r = super().profile_align(batch)
        return AlignResult(_dev(r.maps.astype(np.int32)), _dev(r.counts), r.col_offsets)

    def place_segments(self, targets, target, start, values, maps, parent, widths):
        CpuBackend.place_segments([_plain(t) for t in targets], target, start, _plain(values), _plain(maps),
                                  parent, widths)

    def add_bonuses(self, out, first, count, wb, base, scale, lib_a, lib_b, vote, cur):
        self.bonus_levels += 1
        CpuBackend.add_bonuses(_plain(out), first, count, wb, base, scale, *(_plain(x) for x in (lib_a, lib_b, vote, cur)))

    def walk_columns(self, cur, start, count, base, maps):
        CpuBackend.walk_columns(_plain(cur), start, count, base, _plain(maps))


class Host(CpuBackend):
    """The host side: takes and gives NumPy arrays only."""

    def gather_profiles(self, parts, part, start, widths, codes, values=None):
        for p in np.unique(part):
            _host(codes if p < 0 else parts[p])
        return super().gather_profiles(parts, part, start, widths, codes, values)

    def profile_align(self, batch):
        _host(batch.counts)
        return super().profile_align(batch)

    def place_segments(self, targets, target, start, values, maps, parent, widths):
        for a in (*targets, values, maps):
            _host(a)
        super().place_segments(targets, target, start, values, maps, parent, widths)

    def add_bonuses(self, out, first, count, wb, base, scale, lib_a, lib_b, vote, cur):
        for a in (out, lib_a, lib_b, vote, cur):
            _host(a)
        super().add_bonuses(out, first, count, wb, base, scale, lib_a, lib_b, vote, cur)

    def walk_columns(self, cur, start, count, base, maps):
        for a in (cur, maps):
            _host(a)
        super().walk_columns(cur, start, count, base, maps)


@pytest.fixture
def sides(monkeypatch):
    """Levels put on a random side (seeded), the host side checking what it gets (the level
    loop always: never the host's one call for the whole stage)."""
    monkeypatch.setattr(msa.backends.cpu, "CpuBackend", Host)
    monkeypatch.setattr(progressive, "HOST_STAGE", "device")
    rng = np.random.default_rng(5)
    picks: list[int] = []

    def choose(self, wa, wb, away):
        if not self.hybrid:
            return 0
        picks.append(int(rng.integers(0, 2)))
        return picks[-1]

    monkeypatch.setattr(progressive._Sides, "choose", choose)
    return picks


@pytest.mark.parametrize("per", [1, 3, 1_000_000])
def test_levels_on_random_sides_give_the_one_side_alignment(sides, per) -> None:
    rng = np.random.default_rng(per)
    dbs, trees, gaps = random_families(rng)
    weights = random_weights(rng, dbs)
    want = progressive_align_many(dbs, trees, MATRIX, gaps, CpuBackend(), weights)
    fake = FakeGpu(per)
    got = progressive_align_many(dbs, trees, MATRIX, gaps, fake, weights)
    assert 0 < sum(sides) < len(sides) and fake.levels  # both sides ran levels
    for db, (columns, width), (want_columns, want_width) in zip(dbs, got, want):
        assert width == want_width and type(columns) is np.ndarray
        np.testing.assert_array_equal(columns, want_columns)
        check_invariants(db, columns, width)


def test_roots_profiles_from_either_side(sides) -> None:
    rng = np.random.default_rng(9)
    dbs = [random_db(rng, n, 5, 60) for n in (30, 17, 2)]
    trees = [caterpillar(30), balanced(17), balanced(2)]
    gaps = random_families(rng)[2][:3]
    weights = [rng.integers(1, 9, 30), None, rng.integers(1, 9, 2)]
    want = progressive_profiles(dbs, trees, MATRIX, gaps, CpuBackend(), weights)
    got = progressive_profiles(dbs, trees, MATRIX, gaps, FakeGpu(), weights)
    for (c, w, t), (wc, ww, wt) in zip(got, want):
        assert w == ww and type(t) is np.ndarray
        np.testing.assert_array_equal(c, wc)
        np.testing.assert_array_equal(t, wt)


def test_the_model_puts_thin_levels_on_the_host(monkeypatch) -> None:
    """Unforced: a caterpillar of short sequences (one small merge a level) runs on the host,
    a level of many long merges on the device, and a move of the children counts; the same bytes."""
    monkeypatch.setattr(msa.backends.cpu, "CpuBackend", Host)
    monkeypatch.setattr(progressive, "HOST_STAGE", "device")
    rng = np.random.default_rng(3)
    db, gaps = random_db(rng, 40, 20, 30), random_families(rng)[2][5]
    fake = FakeGpu()
    got = progressive_align(db, caterpillar(40), MATRIX, gaps, fake)
    assert fake.levels == 0
    want = progressive_align(db, caterpillar(40), MATRIX, gaps, CpuBackend())
    assert got[1] == want[1] and np.array_equal(got[0], want[0])
    sides, none = progressive._Sides(fake), np.zeros(2, dtype=np.int64)
    wide, thin = np.full(4096, 3000), np.array([30])
    assert sides.choose(wide, wide, none) == 0
    assert sides.choose(thin, thin, none) == 1
    assert sides.choose(thin, thin, np.array([0, 10**8])) == 0  # its children are on the device
    monkeypatch.setattr(progressive, "HYBRID", False)
    assert progressive._Sides(fake).choose(thin, thin, none) == 0


def test_the_whole_stage_on_the_host_where_the_model_says(monkeypatch) -> None:
    """A GPU run hands its whole progressive stage to the host's one compiled call where the
    model predicts it finishes first (a deep tree of short sequences), keeps the level loop for
    wide levels of long ones and past HOST_STAGE_MAX sequences, and both give the one-side bytes."""
    calls: list[int] = []

    class Counted(Host):
        @staticmethod
        def align_forest(*args, **kw):
            calls.append(1)
            return CpuBackend.align_forest(*args, **kw)

    monkeypatch.setattr(msa.backends.cpu, "CpuBackend", Counted)
    rng = np.random.default_rng(4)
    short, long_ = random_db(rng, 300, 20, 30), random_db(rng, 4000, 900, 1000)
    gaps = random_families(rng)[2][5]
    of = progressive._Forest.of
    assert progressive._host_stage_first(of([short], [caterpillar(300)], [gaps], [None]))
    assert not progressive._host_stage_first(of([long_], [balanced(4000)], [gaps], [None]))
    weights = rng.integers(1, 9, 300)
    want = progressive_align(short, caterpillar(300), MATRIX, gaps, CpuBackend(), weights)
    for stage, one_call in (("model", 1), ("host", 1), ("device", 0)):
        monkeypatch.setattr(progressive, "HOST_STAGE", stage)
        calls.clear()
        got = progressive_align(short, caterpillar(300), MATRIX, gaps, FakeGpu(), weights)
        assert got[1] == want[1] and np.array_equal(got[0], want[0])
        assert len(calls) == one_call, stage
    monkeypatch.setattr(progressive, "HOST_STAGE", "model")
    monkeypatch.setattr(progressive, "HOST_STAGE_MAX", 299)
    assert not progressive._host_stage_first(of([short], [caterpillar(300)], [gaps], [None]))
