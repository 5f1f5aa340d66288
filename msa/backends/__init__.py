"""The compute-backend seam: pipeline modules get a Backend and never ask which one."""
from __future__ import annotations

import functools
import importlib.util
import math
import sys
from types import ModuleType
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from msa.params import DEVICES
from msa.progress import current

if TYPE_CHECKING:
    import numpy as np

    from msa.distances.kmers import KmerAlphabet, KmerTables
    from msa.profile import AlignBatch, AlignResult


class BackendUnavailable(RuntimeError):
    """The requested device cannot be used on this machine."""


#: Bytes of the GB of ``--gpu-memory`` (decimal, as the option's help says).
GB = 10**9


class DeviceMemoryError(BackendUnavailable):
    """One unit of device work (a merge, a group's distances) does not fit the memory msa may
    use: ``limit`` bytes (the ``--gpu-memory`` cap; None: the device's free memory).
    ``needed`` is a lower bound on the bytes that would do."""

    def __init__(self, needed: int, limit: int | None) -> None:
        self.needed = int(needed)
        self.limit = limit
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.limit:
            need = math.ceil(max(self.needed, self.limit + 1) / GB * 10) / 10
            return (f"--gpu-memory {self.limit / GB:g} GB is too small for this input; "
                    f"at least {need:.1f} GB is needed")
        need = math.ceil(self.needed / GB * 10) / 10
        return f"the GPU ran out of memory for this input; at least {need:.1f} GB free is needed"

    @classmethod
    def from_exception(cls, exc: BaseException) -> "DeviceMemoryError | None":
        """The error for CuPy's OutOfMemoryError (size and bytes allocated so far; None for a
        MemoryError of the host)."""
        if isinstance(exc, cls):
            return exc
        size, total = getattr(exc, "_size", None), getattr(exc, "_total", None)
        if size is None or total is None:
            return None
        return cls(int(size) + max(int(total), 0), int(getattr(exc, "_limit", 0) or 0) or None)


class Backend(Protocol):
    """Batch operations named after pipeline steps.

    Every implementation returns the same integers for the same input; the CPU
    backend is the oracle for the CUDA one. Each backend is a package with one
    module per stage (``kmers``, ``lcs``, ``sw``, ``align``), the CUDA module
    beside its CPU oracle of the same name.

    Delegation: a backend may answer a stage by calling the CPU backend where it
    has no kernel yet, since the results are equal by construction. Only these do,
    in :mod:`msa.backends.cuda.lcs`:

    * ``lcs_nearest_reference``: PartTree's picks split with link matrices (not the
      default sampled split, which runs ``lcs_nearest_sample`` on the device);
    * ``lcs_prim_msts``, only for groups holding a sequence of ~50k residues or more,
      whose masks do not fit in the kernel's shared memory.
    """

    name: str

    # Guide-tree stage (see msa.distances.kmers for the struct-array layout, msa.tree.parttree
    # for how the batches are formed). Condensed matrices use scipy's pair order;
    # group g's matrix is out[out_off[g]:out_off[g+1]]. The tables keep the KmerAlphabet they
    # were built with, and the 6-mer distances take its length factor from them.
    def kmer_tables(self, codes, offsets, alphabet: KmerAlphabet) -> KmerTables: ...
    def nearest_reference(
        self, tables, ref_ids, ref_off, member_ids, member_node, cap: float = ...
    ) -> tuple[np.ndarray, np.ndarray]: ...
    def kmer_distance_matrix(
        self, tables, ids, group_off, cap: float = ...
    ) -> tuple[np.ndarray, np.ndarray]: ...
    def lcs_distance_matrix(self, codes, offsets, ids, group_off) -> tuple[np.ndarray, np.ndarray]: ...
    # Smith-Waterman score distances (msa.backends.cpu.sw): the 24x24 int64 matrix, GapCosts unrescaled.
    def sw_distance_matrix(
        self, codes, offsets, ids, group_off, matrix, gaps
    ) -> tuple[np.ndarray, np.ndarray]: ...
    # PartTree's LCS assignment (nearest, distance, link matrices, their offsets) and the
    # O(n)-memory single-linkage MST (edges a, b, weight); see msa.backends.cpu.lcs.
    def lcs_nearest_reference(
        self, codes, offsets, ref_ids, ref_off, member_ids, member_node
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...
    # Prim's MSTs of many groups (each of >= 1 member): group g's s-1 edges at rows
    # group_off[g] - g. ``prim_every_group``: whether single-linkage LCS groups of every size
    # take this path (the GPU, which runs the groups' steps concurrently) or only those past
    # exact_tree_max (the CPU, where the condensed matrix is faster for small groups).
    prim_every_group: bool
    # LCS pairs one tree-stage call may take (msa.tree.parttree cuts longer calls): a checkpoint
    # of msa.interrupts comes between calls, so each call should end well within a second.
    lcs_pairs_per_call: int

    def lcs_prim_msts(
        self, codes, offsets, ids, group_off
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    # The sampled single-linkage split: nearest sample member and its distance, no link matrices.
    def lcs_nearest_sample(
        self, codes, offsets, ref_ids, ref_off, member_ids, member_node
    ) -> tuple[np.ndarray, np.ndarray]: ...

    # Progressive stage (msa.profile holds the batch layout, msa.progressive the driver).
    # Profile tables and column maps live in the backend's array module ``xp`` (NumPy, or
    # CuPy on the GPU) for the whole stage; ``profile_align`` takes and returns such arrays
    # (batch.counts may also be a host array) and only the final columns go through ``to_host``.
    # Each merge has its own gap costs (``batch.gap_rows()``): a level may hold merges of several
    # families (msa.progressive.progressive_align_many), whose costs are rescaled by their sizes.
    xp: ModuleType

    def profile_align(self, batch: AlignBatch) -> AlignResult: ...
    # align_forest: the whole stage of a forest (msa.progressive._Forest's arrays: codes,
    # offsets, weights, children, levels per merge, gaps) in one call, where a backend pays
    # more per level than per merge (the CPU): (the final column of every residue, every
    # node's width), as the level loop would give them. None: msa.progressive drives the
    # levels (the GPU's launches).
    align_forest: Callable[..., tuple[np.ndarray, np.ndarray]] | None
    def to_host(self, a) -> np.ndarray: ...
    # Data movement between levels, one call per level (msa.progressive). gather_profiles:
    # segment g is rows start[g].. of parts[part[g]], or for part[g] == -1 the one-hot rows of
    # codes[start[g]:...] (values[g] in the residue's column: a leaf's weight; 1 without values);
    # widths[g] rows each, laid end to end (int32, N_COUNTS wide).
    # place_segments: targets[target[g]][start[g] + c] = values[parent[g] + maps[off[g] + c]]
    # for c < widths[g], off the segments' offsets laid end to end.
    def gather_profiles(
        self, parts: list, part: np.ndarray, start: np.ndarray, widths: np.ndarray, codes,
        values: np.ndarray | None = None,
    ): ...
    # level_cuts: where to cut a level's merges (their children's widths, two per merge, in
    # merge order) into consecutive pieces whose gathered tables fit the memory the backend may
    # use; [0, n_merges] when a level need not be cut (the CPU). A piece is one batch of
    # merges, so the cut changes no result (``--gpu-memory`` below a whole level's tables).
    def level_cuts(self, kid_widths: np.ndarray) -> np.ndarray: ...
    # profile_slots (msa add): every sequence k (host ``codes[offsets[k]:offsets[k+1]]``) aligned
    # to one profile (a host table over ``n_profile`` sequences) as a merge of the progressive
    # stage would align them (``gaps``: one gap vector); for every residue, on the host: how
    # many profile columns are left of its column in the merge's parent (int64) and whether
    # one shares it (bool). ``advance(n)`` is called as merges finish (progress).
    def profile_slots(
        self, profile: np.ndarray, n_profile: int, codes: np.ndarray, offsets: np.ndarray, matrix: np.ndarray,
        gaps: np.ndarray, advance: Callable[[int], None] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]: ...
    def place_segments(
        self, targets: list, target: np.ndarray, start: np.ndarray, values, maps, parent: np.ndarray,
        widths: np.ndarray,
    ) -> None: ...
    # pair_residues (msa.refine.pair_library: the consistency and refinement libraries): every pair
    # (a, b) of ``pairs`` (host int64, rows of ``offsets``; ``codes`` in xp) aligned as a merge of
    # two one-sequence profiles (``gaps``: one gap vector); on the host, the residues of a and of b
    # that the alignment puts in one column and the pair of each, pairs in order, each in column order.
    def pair_residues(
        self, codes, offsets: np.ndarray, pairs: np.ndarray, matrix: np.ndarray, gaps: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    # add_bonuses (msa.consistency.LevelBonuses): a level's guided merges' consistency bonuses,
    # into ``out`` (int64 zeros, xp): merge g's library pairs of residues first[g].. (count[g],
    # host arrays) each add vote[p] * scale[g] at out[base[g] + cur[lib_a[p]] * wb[g] +
    # cur[lib_b[p]]] (lib_a, lib_b: the pairs' residues as places in cur, vote: their votes,
    # cur: each sampled residue's column in its node, xp).
    def add_bonuses(
        self, out, first: np.ndarray, count: np.ndarray, wb: np.ndarray, base: np.ndarray, scale: np.ndarray,
        lib_a, lib_b, vote, cur,
    ) -> None: ...
    # walk_columns (msa.consistency.LevelBonuses): after a level, cur[start[g]:start[g] + count[g]]
    # (int64, xp; host start, count, base) become maps[base[g] + cur[i]] (a level's maps, xp):
    # the sampled residues below its child g, from their columns there to the parent's.
    def walk_columns(self, cur, start: np.ndarray, count: np.ndarray, base: np.ndarray, maps) -> None: ...

    # Writing (msa.io.fasta's mapped writer): msa.backends.cpu.records.fill_records' records k of a window ``out``
    # of the output file (host memory), header, wrapped row of gaps and residues at their columns.
    def fill_records(
        self, out: np.ndarray, rec_off: np.ndarray, heads: np.ndarray, head_off: np.ndarray, template: np.ndarray,
        width: int, ids: np.ndarray, offsets: np.ndarray, columns: np.ndarray, letters: np.ndarray,
    ) -> None: ...


def get_backend(device: str = "auto", *, quiet: bool = False, memory_cap: int | None = None) -> Backend:
    """Pick the backend once per run; ``auto`` prefers CUDA when CuPy sees a GPU.

    ``memory_cap``: most device bytes msa may use (``--gpu-memory``) on the CUDA backend;
    ignored, with a note, on the CPU."""
    make, note = prepare_backend(device, memory_cap)
    backend = make()
    if note is not None and not quiet:
        current().note(note.removeprefix("msa: "))  # the Python API logs it (msa.progress.LogReport)
    return backend


def prepare_backend(device: str, memory_cap: int | None = None) -> tuple[Callable[[], Backend], str | None]:
    """The backend class for ``device``, imported (the constructor does the device work), and
    for ``auto`` the line that says which one it is (msa._runtime.startup makes it on another thread).
    ``memory_cap`` goes to the CUDA backend; on the CPU the line says it is ignored."""
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; choose {', '.join(DEVICES[:-1])} or {DEVICES[-1]}")
    if memory_cap is not None and memory_cap <= 0:
        raise ValueError(f"the device memory cap must be positive, got {memory_cap} bytes")
    if device in ("auto", "cuda"):
        reason = _cuda_unavailable_reason()
        if reason is None:
            from msa.backends.cuda import CudaBackend  # local: (b) CuPy

            make = CudaBackend if memory_cap is None else functools.partial(CudaBackend, memory_cap=memory_cap)
            return make, "msa: using the GPU (cuda backend)" if device == "auto" else None
        if device == "cuda":
            get = f" ({GET_CUPY})" if reason == NO_CUPY else ""
            raise BackendUnavailable(f"--device cuda: {reason}{get}")
        note: str | None = f"msa: using the CPU ({reason})"
    else:
        note = None
    if memory_cap is not None:
        ignored = f"msa: --gpu-memory {memory_cap / GB:g} GB is ignored on the CPU"
        note = ignored if note is None else f"{note}; {ignored[5:]}"
    from msa.backends.cpu import CpuBackend  # local: (c) Numba loads on the start thread (docs/start-up.md, step 6)

    return CpuBackend, note


#: Why the CUDA backend is missing where CuPy is, and how to get it.
NO_CUPY = "CuPy is not installed"
GET_CUPY = "pip install 'msa[gpu]', or 'msa[gpu-cuda13]' for a CUDA 13 driver"


def cupy_installed() -> bool:
    """Whether CuPy is installed: found, not imported (its import takes 0.2-0.5 s), for what a
    run says about the GPU before it knows whether one is usable."""
    return importlib.util.find_spec("cupy") is not None


def _cuda_unavailable_reason() -> str | None:
    try:
        import cupy
    except Exception:
        return NO_CUPY
    try:
        if not cupy.is_available():
            return "no CUDA GPU found"
    except Exception as exc:  # driver problems surface here
        return f"CUDA is not usable ({exc})"
    try:
        import msa.backends.cuda  # local: (b) CuPy
    except ImportError:
        return "the cuda backend is not built yet"
    return None
