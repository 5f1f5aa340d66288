"""A run of many families: owns the backend and the output directory, feeds the one-family pipeline.

``msa align in/* -O out/`` and :func:`align_files` come here. The run starts
one backend (device context, loaded kernels) and hands it to every family;
:func:`align_file` reads, aligns and writes one family, and its output is
byte-identical to aligning that file alone (``msa align in/A.fa -o out/A.fa``):
parameters are frozen, random picks are hashes of the seed (no generator state
to carry over), and the backend keeps no state between calls that changes a
result. Outputs appear whole by rename (:func:`msa.io.open_output`), so an
output that exists is complete and ``skip_existing`` resumes an interrupted
run. A family whose input is bad fails alone; the others go on.

Small families share the device: each family is read and prepared alone (its
errors its own), and those of at most SMALL_FAMILY_RESIDUES distinct residues
wait in a batch of up to BATCH_RESIDUES, aligned together by
:func:`msa.pipeline.align_families` (guide trees in shared backend calls,
progressive levels in shared launches: a family's own levels no longer pay a
round of launches each) and written one by one, each byte-identical to its
alignment alone. Larger families are aligned alone, as they come.

Above :mod:`msa.pipeline` (one family) and below the CLI; ``align_file`` takes
only picklable arguments besides the backend, so that a scheduler (Dask) can
hand families to workers that each keep their own backend.
"""
from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Union

from msa.backends import Backend, DeviceMemoryError, get_backend
from msa._runtime.interrupts import entered_whole
from msa.io import FORMAT_SUFFIXES, FORMATS, InputError, open_output, read_fasta, write_alignment
from msa.io.output import remove_stale_parts
from msa.params import AlignParams
from msa.progress import Progress, current

if TYPE_CHECKING:
    from msa.pipeline import PreparedFamily

#: Extensions of FASTA inputs: one of them (after a trailing ``.gz``) is cut to name the output.
FASTA_SUFFIXES = (".fa", ".fasta", ".faa", ".fas", ".fsa", ".mfa", ".seq")

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

Status = Literal["done", "skipped", "failed"]
BackendLike = Union[Backend, Callable[[], Backend], None]


@dataclass(frozen=True)
class Family:
    """One input of a run and the output it gets; ``size`` in bytes (-1 when it cannot be read)."""

    input: str
    output: str
    size: int


@dataclass(frozen=True)
class FamilyResult:
    """What became of one family. ``error`` is a one-line message naming the input."""

    input: str
    output: str
    status: Status
    error: str | None = None
    sequences: int = 0
    residues: int = 0
    width: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class RunSummary:
    """Every family's result, in input order, and the run's wall time."""

    results: tuple[FamilyResult, ...]
    seconds: float = 0.0

    def _with(self, status: Status) -> list[FamilyResult]:
        return [r for r in self.results if r.status == status]

    @property
    def done(self) -> list[FamilyResult]:
        return self._with("done")

    @property
    def skipped(self) -> list[FamilyResult]:
        return self._with("skipped")

    @property
    def failed(self) -> list[FamilyResult]:
        return self._with("failed")

    @property
    def ok(self) -> bool:
        """No family failed."""
        return not self.failed


def align_files(
    inputs: Iterable[str | os.PathLike[str]],
    output_dir: str | os.PathLike[str],
    params: AlignParams | None = None,
    *,
    fmt: str = "fasta",
    gzip: bool = False,
    skip_existing: bool = False,
    backend: BackendLike = None,
    scheduler: object = None,
    workers: int | None = None,
    **options: object,
) -> RunSummary:
    """Align each input file (or each file of an input directory) into ``output_dir``.

    Args:
        inputs: FASTA files (gzipped or not) and directories, whose regular,
            non-hidden files are taken in name order.
        output_dir: created if missing; each output is named by
            :func:`output_name` (``PF00078.fa.gz`` -> ``PF00078.fa``).
        params: the parameters of every family; ``options`` override fields of it.
        fmt: one of ``msa.io.FORMATS``. gzip: compress every output (``.gz`` added).
        skip_existing: leave inputs whose output exists alone (resume a run).
        backend: a started backend, or a function returning one; None starts the
            ``params.device`` backend once, on the first family that needs it.
        scheduler, workers: a Dask cluster's scheduler address (or a
            ``distributed.Client``), or a number of local workers to start:
            the families go to Dask workers, each with its own backend
            (:func:`msa.distributed.run_families_dask`; needs ``msa[dask]``).

    Returns:
        A RunSummary; a family that failed has its one-line error there and
        leaves no file. Raises only for the run as a whole: ValueError or
        OSError for bad inputs or an output directory that cannot be written
        (before any work), BackendUnavailable for the device.

    Example:
        >>> summary = align_files(["in/PF00078.fa", "in/PF00079.fa"], "out", device="cpu")  # doctest: +SKIP
        >>> len(summary.done), [r.error for r in summary.failed]  # doctest: +SKIP
        (2, [])
    """
    params = (params or AlignParams()).with_(**options)
    if scheduler is not None or workers is not None:
        from msa.distributed import check_options, run_families_dask

        check_options(params.device, scheduler, workers)
        families = plan_run(inputs, output_dir, fmt=fmt, gzip=gzip)
        return run_families_dask(
            families, params, fmt=fmt, skip_existing=skip_existing, scheduler=scheduler, workers=workers
        )
    families = plan_run(inputs, output_dir, fmt=fmt, gzip=gzip)
    return run_families(families, params, fmt=fmt, skip_existing=skip_existing, backend=backend)


def align_file(
    input: str, output: str, params: AlignParams, backend: BackendLike = None, fmt: str = "fasta"
) -> FamilyResult:
    """Read, align and write one family; its expected failures come back in the result.

    The unit of a run (and of a scheduler's task): the arguments other than
    ``backend`` are strings and a frozen AlignParams. The output is written
    only once the alignment is done, by a rename, so a failed family leaves
    nothing. Bugs and interruptions (anything but FAMILY_ERRORS) propagate.
    """
    read = _read_family(Family(input, output, -1), params)
    return read if isinstance(read, FamilyResult) else _align_alone(read, backend, fmt)


@dataclass
class _ReadFamily:
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


def _read_family(family: Family, params: AlignParams) -> "_ReadFamily | FamilyResult":
    """Read and prepare one family (sequence type, duplicates); a failed result on its errors."""
    start = time.perf_counter()
    try:
        with current().stage("reading"):
            db = read_fasta(family.input)
        from msa.pipeline import prepare_family

        prepared = prepare_family(db, params)
    except FAMILY_ERRORS as exc:
        return _failed(family, exc, time.perf_counter() - start)
    return _ReadFamily(family, prepared, len(db), int(db.offsets[-1]), time.perf_counter() - start)


def _align_alone(read: _ReadFamily, backend: BackendLike, fmt: str) -> FamilyResult:
    """Align one read family by itself and write it."""
    start = time.perf_counter()
    try:
        from msa.pipeline import align_prepared

        aligned = align_prepared(read.prepared, backend)  # reports its own stages
    except FAMILY_ERRORS as exc:
        return _failed(read.family, exc, read.seconds + time.perf_counter() - start)
    return _write(read, aligned, fmt, time.perf_counter() - start)


def _align_batch(reads: list[_ReadFamily], backend: BackendLike, fmt: str, progress: Progress) -> Iterator[FamilyResult]:
    """Align read families together (msa.pipeline.align_families) and write them one by one,
    yielding each result as it is written. If the batch fails (a family's error, or a batch
    too large for the device memory), each family is aligned alone instead, for its own
    result or one-line error."""
    if len(reads) == 1:
        with progress.family():
            yield _align_alone(reads[0], backend, fmt)
        return
    start = time.perf_counter()
    try:
        from msa.pipeline import align_families

        with progress.family():
            aligned = align_families([r.prepared for r in reads], backend)
    except (*FAMILY_ERRORS, MemoryError):
        for read in reads:
            with progress.family():
                yield _align_alone(read, backend, fmt)
        return
    per_residue = (time.perf_counter() - start) / max(sum(r.work for r in reads), 1)
    for read, rows in zip(reads, aligned):
        with progress.family():
            yield _write(read, rows, fmt, per_residue * read.work)  # its share of the batch's time


def _write(read: _ReadFamily, aligned, fmt: str, align_seconds: float) -> FamilyResult:
    """Write an aligned family whole (by a rename); its result."""
    start = time.perf_counter()
    family = read.family
    try:
        with entered_whole(open_output(family.output, read.prepared.params.gzip_level)) as out, current().stage("writing"):
            write_alignment(out, aligned, fmt)
    except FAMILY_ERRORS as exc:
        return _failed(family, exc, read.seconds + align_seconds + time.perf_counter() - start)
    return FamilyResult(
        family.input, family.output, "done", sequences=read.sequences, residues=read.residues,
        width=aligned.width, seconds=read.seconds + align_seconds + time.perf_counter() - start,
    )


def _failed(family: Family, exc: BaseException, seconds: float) -> FamilyResult:
    return FamilyResult(family.input, family.output, "failed", error=_family_error(family.input, exc), seconds=seconds)


def pending(families: Sequence[Family], skip_existing: bool) -> tuple[dict[str, FamilyResult], list[Family]]:
    """The skipped families' results (``--skip-existing``: the output exists, so it is complete),
    and the families to align, largest first: the long ones start early (on one device or on
    a cluster's workers)."""
    results: dict[str, FamilyResult] = {}
    todo: list[Family] = []
    for family in families:
        if skip_existing and os.path.exists(family.output):
            results[family.input] = FamilyResult(family.input, family.output, "skipped")
        else:
            todo.append(family)
    todo.sort(key=lambda f: (-f.size, f.input))
    return results, todo


def run_families(
    families: Sequence[Family],
    params: AlignParams,
    *,
    fmt: str = "fasta",
    skip_existing: bool = False,
    backend: BackendLike = None,
    progress: Progress | None = None,
    on_result: Callable[[FamilyResult], None] | None = None,
) -> RunSummary:
    """Align planned families with one backend, largest input first; see :func:`align_files`.

    ``progress`` draws one bar over the families (its stage lines per family
    only when verbose); ``on_result`` hears of each family as it ends (the
    CLI prints failures there).
    """
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
            advance(1, description=f"families ({_count(residues)} residues)")

        batch: list[_ReadFamily] = []
        try:
            for family in todo:
                with progress.family():
                    read = _read_family(family, params)
                if isinstance(read, FamilyResult):
                    finish(read)
                elif not read.small:
                    with progress.family():
                        finish(_align_alone(read, shared, fmt))
                else:
                    if batch and sum(r.work for r in batch) + read.work > BATCH_RESIDUES:
                        for result in _align_batch(batch, shared, fmt, progress):
                            finish(result)
                        batch = []
                    batch.append(read)
            for result in _align_batch(batch, shared, fmt, progress):
                finish(result)
        except _StartError as exc:
            raise exc.error from None
    return RunSummary(tuple(results[f.input] for f in families), time.perf_counter() - start)


def plan_run(
    inputs: Iterable[str | os.PathLike[str]], output_dir: str | os.PathLike[str], *, fmt: str = "fasta",
    gzip: bool = False,
) -> list[Family]:
    """The families of a run with their output paths; makes ``output_dir`` and checks it is writable.

    Raises (before any work): ValueError for no inputs, stdin among them, an
    unknown format, two inputs that would write the same output, or an
    output that would replace its input; OSError for an output directory
    that cannot be made or written.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {fmt!r}; choose one of {', '.join(FORMATS)}")
    files = expand_inputs(inputs)
    if not files:
        raise ValueError("no input files (the directories given are empty)")
    out_dir = os.fspath(output_dir)
    families: list[Family] = []
    seen: dict[str, str] = {}
    for path in files:
        output = os.path.join(out_dir, output_name(path, fmt, gzip))
        key = os.path.realpath(output)
        if key in seen:
            raise ValueError(f"{seen[key]} and {path} would both be written to {output}")
        if key == os.path.realpath(path):
            raise ValueError(f"{path}: its output {output} would replace it; choose another -O/--output-dir")
        seen[key] = path
        try:
            size = os.stat(path).st_size
        except OSError:
            size = -1  # align_file reports it
        families.append(Family(path, output, size))
    make_output_dir(out_dir)
    remove_stale_parts(out_dir, [os.path.basename(f.output) for f in families])  # a killed run's
    return families


def expand_inputs(inputs: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Input paths with each directory replaced by its regular, non-hidden files in name order.

    A path that does not exist stays in the list (its family fails with the
    reader's error); stdin (``-``) has no name to write an output under.
    """
    files: list[str] = []
    for item in inputs:
        path = os.fspath(item)
        if path == "-":
            raise ValueError("'-' (stdin) has no name for its output in -O/--output-dir; give files")
        if os.path.isdir(path):
            with os.scandir(path) as entries:
                names = sorted(e.name for e in entries if not e.name.startswith(".") and e.is_file())
            files.extend(os.path.join(path, name) for name in names)
        else:
            files.append(path)
    return files


def output_name(input: str | os.PathLike[str], fmt: str = "fasta", gzip: bool = False) -> str:
    """The output's file name: the input's, less ``.gz`` and one FASTA extension, plus the format's.

    >>> output_name("in/PF00078.fa.gz"), output_name("PF00078.10000", "clustal", gzip=True)
    ('PF00078.fa', 'PF00078.10000.aln.gz')
    """
    name = os.path.basename(os.fspath(input))
    if name.lower().endswith(".gz") and len(name) > 3:
        name = name[:-3]
    root, ext = os.path.splitext(name)
    if root and ext.lower() in FASTA_SUFFIXES:
        name = root
    return name + FORMAT_SUFFIXES[fmt] + (".gz" if gzip else "")


def make_output_dir(path: str) -> None:
    """Make ``path`` (parents too) unless it exists, and check that a file can be made in it."""
    try:
        os.makedirs(path, exist_ok=True)
    except FileExistsError:
        raise NotADirectoryError(20, "Not a directory", path) from None
    try:
        fd, probe = tempfile.mkstemp(prefix=".msa-check.", suffix=".part", dir=path)
    except OSError as exc:  # read-only, no permission: name the directory, not the probe
        raise type(exc)(exc.errno, exc.strerror, path) from None
    os.close(fd)
    os.unlink(probe)


def one_line(exc: BaseException | str) -> str:
    """An error (or a name) as one line, with the file name first for OS errors; control
    characters escaped (a file name with a newline or an escape sequence prints as ``\\n``,
    ``\\x1b``), odd bytes of names as ``\\xff``."""
    if isinstance(exc, str):
        text = exc
    elif isinstance(exc, OSError) and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(_CONTROL.sub(_escaped, text.strip()).split())


#: What one_line escapes: C0 and C1 control characters, DEL, and bytes kept by surrogateescape.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\udc80-\udcff]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code - 0xDC00:02x}" if code >= 0xDC80 else repr(match[0])[1:-1]


def _family_error(input: str, exc: BaseException) -> str:
    text, name = one_line(exc), one_line(input)
    return text if text.startswith(name) else f"{name}: {text}"


def _count(n: int) -> str:
    for scale, unit in ((10**9, "G"), (10**6, "M"), (10**3, "k")):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return str(n)


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
