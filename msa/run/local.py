"""A run of families in this process: one backend, fed family by family (or in batches).

``msa align in/* -O out/`` (without a cluster) and :func:`msa.run.align_files`
come here. The run starts one backend (device context, loaded kernels) and
hands it to every family; :func:`align_file` reads, aligns and writes one
family, and its output is byte-identical to aligning that file alone
(``msa align in/A.fa -o out/A.fa``, :mod:`msa.run.single`, which takes the
same steps: :func:`read_input`, :func:`prepare_read`, ``align_prepared``,
:func:`write_rows`): parameters are frozen, random picks are hashes of the
seed (no generator state to carry over), and the backend keeps no state
between calls that changes a result. Outputs appear whole by rename
(:func:`msa.io.open_output`), so an output that exists is complete and
``skip_existing`` resumes an interrupted run. A family whose input is bad
fails alone; the others go on.

Small families share the device: each family is read and prepared alone (its
errors its own), and those of at most SMALL_FAMILY_RESIDUES distinct residues
wait in a batch of up to BATCH_RESIDUES, aligned together by
:func:`msa.pipeline.align_families` (guide trees in shared backend calls,
progressive levels in shared launches: a family's own levels no longer pay a
round of launches each) and written one by one, each byte-identical to its
alignment alone. Larger families are aligned alone, as they come.

Above :mod:`msa.pipeline` (one family); ``align_file`` takes only picklable
arguments besides the backend, so that a scheduler (:mod:`msa.run.dask`) can
hand families to workers that each keep their own backend.
"""
from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, Union

from msa.interrupts import entered_whole
from msa._runtime.startup import BackendStart, skip_numba_extensions
from msa.backends import Backend, DeviceMemoryError, get_backend
from msa.io import InputError, open_output, read_fasta, write_alignment
from msa.io.output import GZIP_LEVEL
from msa.io.writers import check_names
from msa.params import AlignParams
from msa.progress import Progress, current
from msa.run.plan import Family, pending
from msa.run.results import FamilyResult, RunSummary, count, family_error

if TYPE_CHECKING:
    from msa.pipeline import PreparedFamily
    from msa.seqdb import SeqDB

#: What fails one family (a bad or unreadable input, a full disk, too little device memory
#: under --gpu-memory, too little host memory); the run goes on without it.
FAMILY_ERRORS = (InputError, ValueError, OSError, EOFError, DeviceMemoryError, MemoryError)

#: Families of at most this many distinct residues are aligned in batches with others
#: (a 1,000-sequence Pfam family has 0.1-0.5 x 10^6; 10^4 sequences ~3 x 10^6): a small
#: family's levels are a handful of small launches each, mostly launch latency, which the
#: batch pays once for all its families. Larger families have the work to fill their own
#: launches and are aligned alone.
SMALL_FAMILY_RESIDUES = 1 << 21
#: Most distinct residues a batch of small families holds (all of BaliFam's 56 families of
#: 1,000 sequences, 9.4 x 10^6, in one): bounds the host memory of the read families that
#: wait and the device memory of a level's gathered profiles (the leaves' one-hot tables,
#: 112 bytes a residue). The DP itself runs in pieces that fit the device.
BATCH_RESIDUES = 1 << 24
#: A family with a longer sequence is aligned alone: the GPU's Prim kernel holds a
#: sequence's bit masks in shared memory up to ~50,000 residues and runs a call with a
#: longer one on the CPU, which would take every family of the batch there.
BATCH_MAX_LENGTH = 1 << 15

BackendLike = Union[Backend, Callable[[], Backend], None]


def align_file(
    input: str, output: str, params: AlignParams, backend: BackendLike = None, fmt: str = "fasta"
) -> FamilyResult:
    """Read, align and write one family; its expected failures come back in the result.

    The unit of a run (and of a scheduler's task): the arguments other than
    ``backend`` are strings and a frozen AlignParams. The output is written
    only once the alignment is done, by a rename, so a failed family leaves
    nothing. Bugs and interruptions (anything but FAMILY_ERRORS) propagate.
    """
    read = _read_family(Family(input, output, -1), params, fmt)
    return read if isinstance(read, FamilyResult) else _align_alone(read, backend, fmt, _never)


@dataclass
class ReadFamily:
    """A family read and prepared (msa.pipeline.prepare_family), waiting for its alignment;
    ``seconds`` it took so far."""

    family: Family
    prepared: PreparedFamily
    sequences: int  # every record, and its residues (the result's counts)
    residues: int
    seconds: float

    @property
    def work(self) -> int:
        """Residues of the distinct sequences: what a batch's budget counts."""
        return self.prepared.residues

    @property
    def small(self) -> bool:
        """Whether it goes into a batch of small families (see SMALL_FAMILY_RESIDUES)."""
        prepared = self.prepared
        return (
            prepared.params.tree_file is None
            and prepared.residues <= SMALL_FAMILY_RESIDUES
            and int(prepared.unique.lengths.max(initial=0)) <= BATCH_MAX_LENGTH
        )


def _read_family(family: Family, params: AlignParams, fmt: str = "fasta") -> "ReadFamily | FamilyResult":
    """Read and prepare one family (sequence type, duplicates); a failed result on its errors,
    names that ``fmt`` cannot hold among them (refused before the alignment, not after)."""
    start = time.perf_counter()
    try:
        db = read_input(family.input)
        check_names(db.names, fmt)
        return prepare_read(family, db, params, start)
    except FAMILY_ERRORS as exc:
        return _failed(family, exc, time.perf_counter() - start)


def read_input(path: str) -> SeqDB:
    """A family's FASTA input, read under the ``reading`` stage."""
    with current().stage("reading"):
        return read_fasta(path)


def prepare_read(family: Family, db: SeqDB, params: AlignParams, start: float, note: bool = True) -> ReadFamily:
    """A read family prepared (msa.pipeline.prepare_family: the sequence type, with ``note`` a
    line on it, and the duplicates); ``start`` is when its reading began."""
    from msa.pipeline import prepare_family  # local: (c) Numba loads on the start thread (docs/start-up.md, step 6)

    skip_numba_extensions()  # this thread's first compiled call comes next
    prepared = prepare_family(db, params, note=note)
    return ReadFamily(family, prepared, len(db), int(db.offsets[-1]), time.perf_counter() - start)


def output(path: str | None, gzip_level: int = GZIP_LEVEL):
    """An atomic output (msa.io.open_output; stdout for None or ``-``) whose temporary file no
    signal can strand: every output of a run is opened through this."""
    return entered_whole(open_output(path, gzip_level))


def write_rows(out: BinaryIO, aligned, fmt: str, backend: Backend | None = None) -> int | None:
    """Write an alignment to an open output under the ``writing`` stage; the bytes written."""
    with current().stage("writing"):
        return write_alignment(out, aligned, fmt, backend)


def _never(output: str) -> bool:
    """No output is kept: every family's is written."""
    return False


def _align_alone(read: ReadFamily, backend: BackendLike, fmt: str, keep: Callable[[str], bool]) -> FamilyResult:
    """Align one read family by itself and write it (unless ``keep`` says its output is whole)."""
    start = time.perf_counter()
    try:
        from msa.pipeline import align_prepared  # local: (c) Numba loads on the start thread (docs/start-up.md, step 6)

        aligned = align_prepared(read.prepared, backend)  # reports its own stages
    except FAMILY_ERRORS as exc:
        return _failed(read.family, exc, read.seconds + time.perf_counter() - start)
    return _write(read, aligned, fmt, time.perf_counter() - start, keep)


def _align_batch(
    reads: list[ReadFamily], backend: BackendLike, fmt: str, progress: Progress, keep: Callable[[str], bool]
) -> Iterator[FamilyResult]:
    """Align read families together (msa.pipeline.align_families) and write them one by one,
    yielding each result as it is written. If the batch fails (a family's error, or a batch
    too large for the device memory), each family is aligned alone instead, for its own
    result or one-line error."""
    if len(reads) == 1:
        with progress.family():
            yield _align_alone(reads[0], backend, fmt, keep)
        return
    start = time.perf_counter()
    try:
        from msa.pipeline import align_families  # local: (c) Numba loads on the start thread (docs/start-up.md, step 6)

        with progress.family():
            aligned = align_families([r.prepared for r in reads], backend)
    except (*FAMILY_ERRORS, MemoryError):
        for read in reads:
            with progress.family():
                yield _align_alone(read, backend, fmt, keep)
        return
    per_residue = (time.perf_counter() - start) / max(sum(r.work for r in reads), 1)
    for read, rows in zip(reads, aligned):
        with progress.family():
            yield _write(read, rows, fmt, per_residue * read.work, keep)  # its share of the batch's time


def _write(read: ReadFamily, aligned, fmt: str, align_seconds: float, keep: Callable[[str], bool]) -> FamilyResult:
    """Write an aligned family whole (by a rename), unless ``keep`` says its output already is; its result."""
    start = time.perf_counter()
    family = read.family
    try:
        if not keep(family.output):
            with output(family.output, read.prepared.params.gzip_level) as out:
                write_rows(out, aligned, fmt)
    except FAMILY_ERRORS as exc:
        return _failed(family, exc, read.seconds + align_seconds + time.perf_counter() - start)
    return FamilyResult(
        family.input, family.output, "done", sequences=read.sequences, residues=read.residues,
        width=aligned.width, seconds=read.seconds + align_seconds + time.perf_counter() - start,
        seq_type=read.prepared.params.seq_type,
    )


def _failed(family: Family, exc: BaseException, seconds: float) -> FamilyResult:
    return FamilyResult(family.input, family.output, "failed", error=family_error(family.input, exc), seconds=seconds)


def run_local(
    families: Sequence[Family],
    params: AlignParams,
    *,
    fmt: str = "fasta",
    skip_existing: bool = False,
    backend: BackendLike = None,
    early_start: bool = False,
    memory_cap: int | None = None,
    progress: Progress | None = None,
    on_result: Callable[[FamilyResult], None] | None = None,
    keep: Callable[[str], bool] = _never,
) -> RunSummary:
    """Align planned families in this process with one backend, largest input first.

    ``backend``: a started one, or a function returning one; None starts
    ``params.device``'s on the first family that needs it, or, with
    ``early_start`` (msa's own processes: the CLI), at once on background
    threads (msa._runtime.startup.BackendStart, under ``memory_cap``).
    ``progress`` draws one bar over the families (its stage lines per family
    only when verbose); ``on_result`` hears of each family as it ends (the
    CLI prints failures there); ``keep(output)`` names outputs already whole that are
    not written again (a Dask task run again after its worker died: msa.run.dask).
    """
    if backend is None and early_start:
        with BackendStart(params.device, memory_cap) as backend_start:
            started = functools.partial(backend_start.backend, quiet=params.quiet)
            return run_local(families, params, fmt=fmt, skip_existing=skip_existing, backend=started,
                             progress=progress, on_result=on_result, keep=keep)
    start = time.perf_counter()
    progress = progress or current()
    results, todo = pending(families, skip_existing)
    shared = _SharedBackend(backend, params)
    residues = 0
    with progress.stage("families", total=len(todo), note=False) as advance:

        def finish(result: FamilyResult) -> None:
            nonlocal residues
            results[result.input] = result
            residues += result.residues
            if on_result is not None:
                on_result(result)
            advance(1, description=f"families ({count(residues)} residues)")

        batch: list[ReadFamily] = []
        try:
            for family in todo:
                with progress.family():
                    read = _read_family(family, params, fmt)
                if isinstance(read, FamilyResult):
                    finish(read)
                elif not read.small:
                    with progress.family():
                        finish(_align_alone(read, shared, fmt, keep))
                else:
                    if batch and sum(r.work for r in batch) + read.work > BATCH_RESIDUES:
                        for result in _align_batch(batch, shared, fmt, progress, keep):
                            finish(result)
                        batch = []
                    batch.append(read)
            for result in _align_batch(batch, shared, fmt, progress, keep):
                finish(result)
        except _StartError as exc:
            raise exc.error from None
    return RunSummary(tuple(results[f.input] for f in families), time.perf_counter() - start)


class _StartError(Exception):
    """The backend's start failed: the run's error, not the family's (carries the original)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class _SharedBackend:
    """The run's one backend, started on first use (after the first family is read) and kept."""

    def __init__(self, backend: BackendLike, params: AlignParams) -> None:
        self._backend = backend
        self._params = params
        self._started: Backend | None = None

    def __call__(self) -> Backend:
        if self._started is None:
            try:
                if self._backend is None:
                    self._started = get_backend(self._params.device, quiet=self._params.quiet)
                elif callable(self._backend):
                    self._started = self._backend()
                else:
                    self._started = self._backend
            except Exception as exc:
                raise _StartError(exc) from exc
        return self._started
