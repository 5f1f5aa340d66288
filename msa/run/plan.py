"""The plan of a run: its families and their output paths, checked before any work.

Every path a run will write is compared by identity with every path it
reads and every other path it writes (:func:`check_paths`), so that no
output replaces an input or another output: ``msa align x.fa -o x.fa``,
``--tree-out`` naming the input or ``-o``, an ``-O`` output named like
another input. ``--device auto``'s choice of backend for one input is planned here too, by a
cost model of each backend's time (:data:`COSTS`, :func:`cpu_first`). Nothing here aligns.
"""
from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from msa.io import FORMAT_SUFFIXES, FORMATS
from msa.io.output import remove_stale_parts
from msa.params import AlignParams
from msa.run.results import FamilyResult

#: Extensions of FASTA inputs: one of them (after a trailing ``.gz``) is cut to name the output.
FASTA_SUFFIXES = (".fa", ".fasta", ".faa", ".fas", ".fsa", ".mfa", ".seq")

#: A path as the user named it, with what it is for the error line (``-o out.fa``, ``the input x.fa``).
Named = tuple[str, str]


@dataclass(frozen=True)
class Family:
    """One input of a run and the output it gets; ``size`` in bytes (-1 when it cannot be read)."""

    input: str
    output: str
    size: int


def identity(path: str) -> tuple[object, ...] | None:
    """What ``path`` is on disk: its regular file's (st_dev, st_ino) through symlinks and hard
    links; for a name that does not exist yet, its resolved parent directory's with the name.
    None for what msa writes into without replacing it (stdout, ``/dev/null``, a pipe)."""
    if path == "-":
        return None
    try:
        st = os.stat(path)
    except OSError:
        parent, name = os.path.split(os.path.abspath(path))
        try:
            st = os.stat(parent)
        except OSError:  # its directory is missing too: it is named by its resolved path
            return ("path", os.path.realpath(path))
        return (st.st_dev, st.st_ino, name)
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def check_paths(reads: Sequence[Named], writes: Sequence[Named]) -> None:
    """Raise ValueError naming both if a path written is one read, or another one written.

    ``reads`` and ``writes`` are (what it is, path) pairs; stdin and stdout (``-``, or a path
    of None) are left out. An input that does not exist is left to its reader's error.
    """
    read_ids = {}
    for what, path in reads:
        if path is not None and os.path.exists(path):
            read_ids.setdefault(identity(path), what)
    written: dict[object, str] = {}
    for what, path in writes:
        key = identity(path) if path is not None else None
        if key is None:
            continue
        if key in read_ids:
            raise ValueError(f"{what} would replace {read_ids[key]} (the same file); nothing written")
        if key in written:
            raise ValueError(f"{what} and {written[key]} are the same file; nothing written")
        written[key] = what


def plan_run(
    inputs: Iterable[str | os.PathLike[str]], output_dir: str | os.PathLike[str], *, fmt: str = "fasta",
    gzip: bool = False, reads: Sequence[Named] = (),
) -> list[Family]:
    """The families of a run with their output paths; makes ``output_dir`` and checks it is writable.

    Raises (before any work): ValueError for no inputs, stdin among them, an
    unknown format, two inputs that would write the same output, or an
    output that would replace an input (its own, another, or one of
    ``reads``: e.g. the ``--tree`` file); OSError for an output directory
    that cannot be made or written.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {fmt!r}; choose one of {', '.join(FORMATS)}")
    files = expand_inputs(inputs)
    if not files:
        raise ValueError("no input files (the directories given are empty)")
    out_dir = os.fspath(output_dir)
    families: list[Family] = []
    seen: dict[object, str] = {}
    for path in files:
        output = os.path.join(out_dir, output_name(path, fmt, gzip))
        key = identity(output) or output
        if key in seen:
            raise ValueError(f"{seen[key]} and {path} would both be written to {output}")
        if key == identity(path):
            raise ValueError(f"{path}: its output {output} would replace it; choose another -O/--output-dir")
        seen[key] = path
        try:
            size = os.stat(path).st_size
        except OSError:
            size = -1  # align_file reports it
        families.append(Family(path, output, size))
    check_paths(
        [*((f"the input {f.input}", f.input) for f in families), *reads],
        [(f"{f.input}: its output {f.output}", f.output) for f in families],
    )
    make_output_dir(out_dir)
    remove_stale_parts(out_dir, [os.path.basename(f.output) for f in families])  # a killed run's
    return families


def tree_file_read(params: AlignParams) -> list[Named]:
    """The ``--tree`` file a run reads besides its inputs (for :func:`check_paths`)."""
    return [] if params.tree_file is None else [(f"the --tree file {params.tree_file}", params.tree_file)]


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


#: What a gzipped FASTA file's size is multiplied by for the cost model's bytes (protein FASTA
#: compresses about 3-4x).
GZIP_RATIO = 4
#: What input_bytes counts for stdin, whose size is not known before it is read.
STDIN_BYTES = 1 << 26
#: Sequences are counted (a scan for '>' of the file's bytes, ~1 ms a MB) only in plain files up
#: to this size; past it the count would cost more than the choice is worth.
COUNT_MAX_BYTES = 1 << 23
MB = 1 << 20


#: The mean record's bytes the cost model assumes where the sequences were not counted
#: (stdin, gzipped or large inputs): a Pfam domain's length.
DEFAULT_RECORD_BYTES = 300


@dataclass(frozen=True)
class Cost:
    """A backend's predicted wall clock for one family in a process of its own:
    ``start + (per_mb * MB + per_1k_sequences * sequences / 1000 + per_mb_length * MB * length
    / 1000) / threads ** core_exponent``, MB the FASTA text (MiB), length its mean record's
    bytes (MB / sequences: the progressive stage's cells grow with the sequences times their
    length squared), ``threads`` the CPU threads the run may use. ``start`` is what a run pays
    before its input matters (interpreter, imports, the CUDA context and modules)."""

    start: float
    per_mb: float
    per_1k_sequences: float = 0.0
    per_mb_length: float = 0.0
    core_exponent: float = 0.0

    @staticmethod
    def work_terms(nbytes: int, sequences: int | None) -> tuple[float, float, float]:
        """(MB, thousands of sequences, MB x mean record bytes / 1000) of an input; uncounted
        sequences count 0 and records DEFAULT_RECORD_BYTES long."""
        mb = nbytes / MB
        length = nbytes / sequences if sequences else DEFAULT_RECORD_BYTES
        return mb, (sequences or 0) / 1000, mb * length / 1000

    def seconds(self, nbytes: int, sequences: int | None, threads: int) -> float:
        mb, kseq, cells = self.work_terms(nbytes, sequences)
        work = self.per_mb * mb + self.per_1k_sequences * kseq + self.per_mb_length * cells
        return self.start + work / max(threads, 1) ** self.core_exponent


#: ``--device auto``'s cost model of ``msa align IN`` (one family, one process): the backend
#: predicted to finish first is started; both give the same bytes up to MST_TREE_MAX["cpu"]
#: sequences (BackendStart.sequences), so the choice costs nothing in the output. Fitted by
#: ``benchmarks/auto_device.py`` to both backends' times on 75 real families of 200-10,000
#: sequences (the example, balifam1000, balifam10000-dev) on an H200 host with 16 CPU threads
#: (msa's bytecode cache on: msa._runtime.bytecode): 7 of the 75 choices were not
#: the faster backend, 1.1 s lost in 88 s (docs/start-up.md). Another host's balance of CPU and
#: GPU moves the crossing; rerun it there.
COSTS: dict[str, Cost] = {
    "cpu": Cost(start=0.413, per_mb=2.137, per_1k_sequences=0.000, per_mb_length=2.755, core_exponent=0.16),
    "cuda": Cost(start=0.948, per_mb=0.597, per_1k_sequences=0.000),
}


def host_threads(threads: int = 0) -> int:
    """The CPU threads a run uses: ``threads``, or (0) the cores this process may run on."""
    if threads > 0:
        return threads
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def auto_device(nbytes: int, sequences: int | None = None, threads: int = 0) -> str:
    """``cpu`` or ``cuda``: the backend :data:`COSTS` predicts finishes first for an input of
    ``nbytes`` of FASTA (and ``sequences``, where counted) with ``threads`` CPU threads (0: all
    cores); a tie goes to the CPU, which needs no device."""
    threads = host_threads(threads)
    cpu, gpu = (COSTS[d].seconds(nbytes, sequences, threads) for d in ("cpu", "cuda"))
    return "cpu" if cpu <= gpu else "cuda"


def input_bytes(path: str) -> int:
    """About how many bytes of text ``path`` holds (gzipped: GZIP_RATIO times its size; ``-``,
    stdin: STDIN_BYTES; a file that cannot be read: 0, its reading reports the error)."""
    if path == "-":
        return STDIN_BYTES
    try:
        size = os.stat(path).st_size
    except OSError:
        return 0
    return size * (GZIP_RATIO if path.endswith(".gz") else 1)


def count_sequences(path: str) -> int | None:
    """The records of a plain FASTA file of at most COUNT_MAX_BYTES (lines starting with '>'),
    else None (stdin, gzipped, larger, unreadable, not a regular file: the model goes by bytes;
    a FIFO is never opened here, where a wait for its writer would ignore signals)."""
    if path == "-" or path.endswith(".gz"):
        return None
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > COUNT_MAX_BYTES:
            return None
        with open(path, "rb") as fh:
            data = fh.read(COUNT_MAX_BYTES + 1)
    except OSError:
        return None
    return data.count(b"\n>") + data.startswith(b">")


def cpu_first(path: str, threads: int = 0) -> bool:
    """Whether ``--device auto`` starts the CPU for ``path`` (a file; ``-`` is stdin, never):
    the cost model (:func:`auto_device`) predicts the CPU finishes first on this host."""
    if path == "-" or not os.path.exists(path):
        return False
    return auto_device(input_bytes(path), count_sequences(path), threads) == "cpu"
