"""The families of a run on a Dask cluster: ``msa align IN... -O DIR --scheduler ADDRESS | --workers N``.

Dask (``distributed``; ``dask_cuda`` finds the GPUs) places the
tasks on workers and retries them; nothing here schedules. The client plans
the tasks (:func:`plan_groups`): each large family alone, the small ones in
groups that a worker runs with :func:`msa.run.local.run_local`, as the
one-process run does (shared launches), largest first and about
TASKS_PER_WORKER per worker so that the tail is short. Each worker first
starts its backend (:func:`warm_up_worker`: the device context and the
compiled kernels, once per worker process) and runs its share of its host's
cores. Workers write each output straight into the output directory (which
they must see at the same path: one machine, or a shared file system) by a
rename, so an output that exists is complete, whatever becomes of its worker;
a worker that dies takes only the group it was running, which Dask runs
again on another worker, writing only the outputs not yet whole. The outputs
are byte-identical to the single-process run's, on any worker and in any
group: the parameters are frozen and the backends keep no state that changes
a result. Each task returns its stage times (:class:`TaskRecord`): the run's
timeline (``-v``, ``$MSA_DASK_TIMELINE``).

Dask is an optional extra (``pip install 'msa[dask]'``, ``'msa[dask-gpu]'``
for dask-cuda); this module imports it only when a run asks for it. Beside
:mod:`msa.run.local`; :func:`msa.run.run_families` chooses between them.
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import itertools
import json
import logging
import os
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from msa import interrupts
from msa.backends import Backend, BackendUnavailable, get_backend
from msa.io.output import check_space, remove_stale_parts, reserve
from msa.params import CONNECT_TIMEOUT, AlignParams
from msa.progress import Progress, current
from msa.run.local import (
    BATCH_RESIDUES, FAMILY_ERRORS, SMALL_FAMILY_RESIDUES, _align_alone, _failed, _read_family, output, run_local,
)
from msa.run.plan import Family, pending
from msa.run.results import FamilyResult, RunSummary, count, family_error, one_line

#: How often Dask runs a family again after an error in its task (a worker that dies is counted
#: apart, by the scheduler's ``distributed.scheduler.allowed-failures``, 3 by default).
RETRIES = 2


class DaskUnavailable(BackendUnavailable):
    """Dask (or dask-cuda) is not installed: the one-line error names the extra that brings it.

    A BackendUnavailable, so that the CLI reports it as one line like a missing GPU."""


def require_dask(flag: str) -> Any:
    """The ``distributed`` module, or DaskUnavailable naming ``flag`` and the extra."""
    try:
        import distributed
    except ImportError:
        raise DaskUnavailable(f"{flag} needs Dask: pip install 'msa[dask]'") from None
    return distributed


def check_options(device: str, scheduler: Any = None, workers: int | None = None, gpus: int | None = None) -> Any:
    """The ``distributed`` module once the cluster options are known to be usable (before any work).

    Raises ValueError for none of them, ``scheduler`` with another, or ``gpus`` with the CPU
    device, DaskUnavailable without Dask (or without dask-cuda for ``gpus``).
    """
    given = [flag for flag, value in (("--scheduler", scheduler), ("--workers", workers), ("--gpus", gpus))
             if value is not None]
    if not given:
        raise ValueError("no cluster: give --scheduler, or --workers and/or --gpus")
    if scheduler is not None and len(given) > 1:
        raise ValueError(f"{', '.join(given)}: a cluster given by --scheduler takes no --workers or --gpus")
    if gpus is not None and device == "cpu":
        raise ValueError("--gpus with --device cpu: use --workers N for CPU workers")
    distributed = require_dask(given[0])
    if gpus is not None:
        try:
            import dask_cuda  # noqa: F401
        except ImportError:
            raise DaskUnavailable("--gpus needs dask-cuda: pip install 'msa[dask-gpu]'") from None
    return distributed


# --- the plan: groups of families, one task each ------------------------------------------

#: Tasks a run aims at per worker: enough that the last ones are short and every worker stays
#: busy to the end (the groups of small families shrink to make them), few enough that each
#: group still fills its shared launches.
TASKS_PER_WORKER = 4


def plan_groups(todo: Sequence[Family], workers: int) -> list[list[Family]]:
    """The run's tasks: each family larger than SMALL_FAMILY_RESIDUES bytes alone (a file's
    bytes bound its residues from above, so every family that could be small is a candidate),
    the small ones packed largest first into groups that :func:`msa.run.local.run_local` runs
    with shared launches: each of at most BATCH_RESIDUES bytes (one batch) and small enough
    that the run has about TASKS_PER_WORKER tasks per worker. Tasks go largest first; the
    plan depends only on the families' sizes and names, not on their order."""
    ordered = sorted(todo, key=lambda f: (-f.size, f.input))
    alone = [[f] for f in ordered if f.size > SMALL_FAMILY_RESIDUES]
    small = [f for f in ordered if f.size <= SMALL_FAMILY_RESIDUES]
    groups: list[list[Family]] = []
    if small:
        spare = max(max(workers, 1) * TASKS_PER_WORKER - len(alone), max(workers, 1))
        total = sum(max(f.size, 0) for f in small)
        budget = min(BATCH_RESIDUES, max(-(-total // spare), max(small[0].size, 1)))
        held = 0
        for family in small:
            if groups and held + max(family.size, 0) <= budget:
                groups[-1].append(family)
                held += max(family.size, 0)
            else:
                groups.append([family])
                held = max(family.size, 0)
    return sorted(alone + groups, key=lambda g: (-sum(max(f.size, 0) for f in g), g[0].input))


# --- on the workers -------------------------------------------------------------------------

_BACKENDS: dict[str, Backend] = {}
#: One task at a time per worker process: a backend (a CUDA context and its streams, Numba's
#: thread count) is not made for concurrent use. Workers should run one thread each (dask-cuda's
#: default; ``dask worker --nthreads 1``); on a worker with more, the others wait here.
_LOCK = threading.Lock()


def worker_backend(device: str, memory_cap: int | None = None) -> Backend:
    """This process's backend for ``device`` (within ``memory_cap``, ``--gpu-memory``), started
    on its first task and kept warm; on a GPU it shares with other workers, it plans its work
    within its share (:func:`_plan_within_share`)."""
    backend = _BACKENDS.get(device)
    if backend is None:
        backend = _BACKENDS[device] = get_backend(device, quiet=True, memory_cap=memory_cap)
        _plan_within_share(backend)
    return backend


def _plan_within_share(backend: Backend) -> None:
    """On a GPU shared by GPU_SHARE_ENV workers, each piece of the CUDA backend's work is planned
    within MEMORY_FRACTION of this worker's share of the GPU's memory (its ``memory_limit``), so
    that the workers' pieces fit together; not a hard cap (that is ``--gpu-memory``): a unit of
    work larger than the share still runs where the GPU has room for it."""
    share = int(os.environ.get(GPU_SHARE_ENV) or 1)
    if share <= 1 or not hasattr(backend, "memory_limit"):
        return
    import cupy

    from msa.backends.cuda.memory import MEMORY_FRACTION  # local: (b) CuPy

    own = int(int(cupy.cuda.runtime.memGetInfo()[1]) * MEMORY_FRACTION) // share
    backend.memory_limit = own if backend.memory_limit is None else min(own, backend.memory_limit)


def worker_threads(threads: int, cores: int, workers_here: int, allowed: int | None = None) -> int:
    """A worker's host threads: the user's ``--threads``, else its share of its host's ``cores``
    among the ``workers_here`` workers there, at most the ``allowed`` cores it may run on
    (dask-cuda pins each GPU worker to its GPU's NUMA node), so that the workers of one host
    do not oversubscribe it with Numba's threads."""
    if threads > 0:
        return threads
    return max(1, min(cores // max(workers_here, 1), allowed or cores))


@dataclasses.dataclass(frozen=True)
class WorkerSetup:
    """What every task needs to set its worker up, decided by the client once per run: the
    count of workers per host (their threads: :func:`worker_threads`) and ``--gpu-memory``."""

    per_host: Mapping[str, int]
    memory_cap: int | None = None


def _worker_params(params: AlignParams, per_host: Mapping[str, int]) -> AlignParams:
    """``params`` with this worker's threads (:func:`worker_threads`; ``per_host``: the client's
    count of workers per host)."""
    import distributed

    host = _host(distributed.get_worker().address)
    threads = worker_threads(params.threads, os.cpu_count() or 1, per_host.get(host, 1), len(os.sched_getaffinity(0)))
    return params.with_(threads=threads)


def _host(address: str) -> str:
    """A worker's host, from its address (``tcp://10.0.0.5:40123`` -> ``10.0.0.5``)."""
    return address.partition("://")[2].rpartition(":")[0] if "://" in address else address.rpartition(":")[0]


@dataclasses.dataclass(frozen=True)
class TaskRecord:
    """What a task did, for the run's timeline: its worker, wall stamps (``time.time()``) of
    its start and end, the host threads it ran with, and seconds per stage of its families."""

    worker: str
    kind: str  # "warm-up" or "group"
    start: float
    end: float
    threads: int
    families: int = 0
    stages: Mapping[str, float] = dataclasses.field(default_factory=dict)


class _StageClock(Progress):
    """A silent reporter that sums each stage's seconds (the task's record)."""

    def __init__(self) -> None:
        super().__init__(quiet=True)
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def stage(self, description: str, total: int | None = None, note: bool = True) -> Iterator[Callable[..., None]]:
        start = time.perf_counter()
        try:
            yield lambda steps=1, description=None: None
        finally:
            if note:
                self.seconds[description] = self.seconds.get(description, 0.0) + time.perf_counter() - start

    @contextlib.contextmanager
    def family(self) -> Iterator[Progress]:
        yield self


@contextlib.contextmanager
def _task(kind: str, params: AlignParams, setup: WorkerSetup, families: int = 0) -> Iterator[dict[str, Any]]:
    """A task on this worker: the one-task lock, its params with the worker's threads
    (``box["params"]``, set for Numba), its backend (``box["backend"]()``: :func:`worker_backend`),
    a silent reporter timing its stages (``box["clock"]``) and, once it ends, its record
    (``box["record"]``)."""
    import distributed

    start = time.time()
    clock = _StageClock()
    box: dict[str, Any] = {"clock": clock}
    with _LOCK:
        box["params"] = run_params = _worker_params(params, setup.per_host)
        box["backend"] = lambda: worker_backend(run_params.device, setup.memory_cap)
        from msa.pipeline import _set_threads  # local: (d) on a Dask worker: the client imports no Numba

        _set_threads(box["params"].threads)
        with clock.running():
            yield box
    box["record"] = TaskRecord(distributed.get_worker().address, kind, start, time.time(), box["params"].threads,
                               families, clock.seconds)


def warm_up_worker(params: AlignParams, setup: WorkerSetup) -> TaskRecord | BackendUnavailable:
    """The first task of each worker: its backend started (device context, kernels loaded) and
    its threads set while the client submits the families."""
    with _task("warm-up", params, setup) as box:
        try:
            box["backend"]()
        except BackendUnavailable as exc:
            return exc
    return box["record"]


def align_group_on_worker(
    group: Sequence[Family], params: AlignParams, fmt: str, cwd: str, setup: WorkerSetup, since_ns: int,
) -> tuple[list[FamilyResult], TaskRecord] | BackendUnavailable:
    """The task of a group of families: :func:`msa.run.local.run_local` with the worker's warm
    backend (small families in shared launches), each family's result its own.

    Paths are as the user gave them, relative to the client's directory ``cwd`` (a worker's
    own is elsewhere); the results name them so. An output this run already wrote
    (modified since ``since_ns``, the run's start: an earlier attempt of this task, on a
    worker that died) is whole and is not written again. A bad input is a failed result, a
    backend that cannot start the BackendUnavailable itself, which ends the run: values, not
    exceptions, so that Dask does not retry them.
    """
    where = [_on_worker(f, cwd) for f in group]
    with _task("group", params, setup, len(group)) as box:
        try:
            summary = run_local(where, box["params"], fmt=fmt, backend=box["backend"],
                                progress=box["clock"], keep=functools.partial(_written_since, since_ns))
        except BackendUnavailable as exc:
            return exc
    return [_as_given(result, full, family) for family, full, result in zip(group, where, summary.results)], box["record"]


def _on_worker(family: Family, cwd: str) -> Family:
    """A family's paths as a worker sees them: joined to the client's directory ``cwd``."""
    return Family(os.path.join(cwd, family.input), os.path.join(cwd, family.output), family.size)


def _as_given(result: FamilyResult, where: Family, family: Family) -> FamilyResult:
    """A worker's result (for the paths ``where``) naming the paths as the user gave them."""
    error = result.error and result.error.replace(where.input, family.input).replace(where.output, family.output)
    return dataclasses.replace(result, input=family.input, output=family.output, error=error)


def _written_since(since_ns: int, path: str) -> bool:
    """Whether ``path`` was written at or after ``since_ns`` (outputs appear whole, by a rename)."""
    try:
        return os.stat(path).st_mtime_ns >= since_ns
    except OSError:
        return False


# --- one family split across the workers (msa.run.split) --------------------------------------


def split_plan_on_worker(
    family: Family, params: AlignParams, fmt: str, cwd: str, setup: WorkerSetup, pieces: int,
) -> tuple[Any, TaskRecord] | BackendUnavailable:
    """A split family's first task: read, prepared and its guide tree built
    (msa.run.split.plan_split), or, where refinement or ``--consistency`` (whose bonuses the
    pieces do not take) needs the whole family, aligned and written here whole; a bad input is
    its failed FamilyResult."""
    from msa.pipeline import family_tree  # local: (d) on a Dask worker: the client imports no Numba
    from msa.run.split import plan_split  # local: (d) on a Dask worker: the client imports no Numba

    where = _on_worker(family, cwd)
    with _task("split plan", params, setup, 1) as box:
        params = box["params"]
        read = _read_family(where, params, fmt)
        try:
            backend = box["backend"]()
        except BackendUnavailable as exc:
            return exc
        if isinstance(read, FamilyResult):
            value: Any = read
        elif read.prepared.params.needs_whole(len(read.prepared.unique)):
            value = _align_alone(read, backend, fmt, lambda output: False)
        else:
            try:
                tree = family_tree(read.prepared, backend)
                with current().stage("planning"):
                    value = plan_split(read.prepared, tree, pieces)
            except FAMILY_ERRORS as exc:
                value = _failed(where, exc, read.seconds)
    if isinstance(value, FamilyResult):
        value = _as_given(value, where, family)
    return value, box["record"]


def align_piece_on_worker(
    piece: Any, plan: Any, params: AlignParams, setup: WorkerSetup, *arrived: None,
) -> tuple[Any, TaskRecord]:
    """A piece's subtrees aligned (msa.run.split.align_piece); ``arrived``: the other pieces'
    :func:`_arrived`, which it waits for."""
    from msa.run.split import align_piece  # local: (d) on a Dask worker: the client imports no Numba

    with _task("split piece", params, setup) as box:
        aligned = align_piece(piece, plan, box["backend"]())  # its own stage
    return aligned, box["record"]


def merge_top_on_worker(plan: Any, profiles: Sequence[Mapping[int, Any]], params: AlignParams,
                        setup: WorkerSetup) -> tuple[Any, TaskRecord]:
    """The merges above the cut (msa.run.split.merge_top), from each piece's root profiles."""
    from msa.run.split import merge_top  # local: (d) on a Dask worker: the client imports no Numba

    with _task("split top", params, setup) as box:
        with current().stage("top merges"):
            top = merge_top(plan, profiles, box["backend"]())
    return top, box["record"]


def write_piece_on_worker(path: str, piece: Any, aligned: Any, top: Any, params: AlignParams,
                          setup: WorkerSetup) -> TaskRecord:
    """A piece's rows written in place into the family's output (msa.run.split.write_piece)."""
    from msa.run.split import write_piece  # local: (d) on a Dask worker: the client imports no Numba

    maps, width = top[0]
    with _task("split write", params, setup) as box:
        with current().stage("writing"):
            write_piece(path, piece, aligned[0], maps, width)
    return box["record"]


def _plan_head(planned: tuple[Any, TaskRecord]) -> tuple[Any, TaskRecord]:
    """The plan without its pieces (what the client needs), or the family's result."""
    value, record = planned
    return (value[0] if isinstance(value, tuple) else value), record


def _plan_piece(planned: tuple[Any, TaskRecord], p: int) -> Any:
    return planned[0][1][p]


def _moved(piece: Any) -> Any:
    """The piece itself, as a task on the worker that aligns it: Dask brings the piece there."""
    return piece


def _arrived(moved: Any) -> None:
    """Nothing, once a piece is on its worker: what the pieces' alignments wait for."""
    return None


def _piece_profiles(aligned: tuple[Any, TaskRecord]) -> dict[int, Any]:
    return aligned[0].profiles


def _top_width(top: tuple[Any, TaskRecord]) -> int:
    return top[0][1]


# --- on the client --------------------------------------------------------------------------

#: A file to write the run's timeline to (JSON: the cluster's start, each task's record);
#: ``msa align -v`` prints it per worker.
TIMELINE_ENV = "MSA_DASK_TIMELINE"


def run_families_dask(
    families: Sequence[Family],
    params: AlignParams,
    *,
    fmt: str = "fasta",
    skip_existing: bool = False,
    scheduler: Any = None,
    workers: int | None = None,
    gpus: int | None = None,
    memory_cap: int | None = None,
    progress: Progress | None = None,
    on_result: Callable[[FamilyResult], None] | None = None,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> RunSummary:
    """:func:`msa.run.run_families` with the families as groups (:func:`plan_groups`), each a
    task on a Dask cluster.

    Args:
        scheduler: the address of a running cluster's scheduler (or a
            ``distributed.Client``), whose workers see the inputs and the
            output directory at the same paths.
        workers, gpus: else start a local cluster for the run (:func:`local_gpu_workers`):
            with ``gpus``, or with ``params.device`` other than cpu, dask-cuda
            installed and a GPU present, GPU workers (``workers`` of them spread
            over the GPUs, or :func:`workers_per_gpu` on each), several on a GPU
            where one would leave it idle; otherwise ``workers`` CPU worker
            processes of one thread each.
        memory_cap: most device bytes each worker may use (``--gpu-memory``); workers
            sharing a GPU plan their work within their share of it.
        connect_timeout: seconds a scheduler's address has to accept the connection and answer.

    Each worker first starts its backend (:func:`warm_up_worker`); its host threads are its
    share of its host's cores unless ``params.threads`` is set. Tasks go largest first (task
    priorities). A family of over msa.run.split's split_family_bytes() written to FASTA, in a run of several
    workers, is split across them along its guide tree (msa.run.split, byte-identical). A
    family whose task still fails after Dask's retries, or whose workers kept
    dying, is failed with that one-line error. Stale ``.part`` files of dead workers are
    removed at the end. With ``-v`` (a verbose ``progress``) the run's timeline is printed
    per worker, and written as JSON to the file named by ``$MSA_DASK_TIMELINE``. Raises
    DaskUnavailable without Dask, BackendUnavailable when a worker cannot start the device.
    """
    distributed = check_options(params.device, scheduler, workers, gpus)
    if params.tree_file is not None:  # a worker's own directory is elsewhere
        params = params.with_(tree_file=os.path.abspath(params.tree_file))
    start = time.perf_counter()
    progress = progress or current()
    results, todo = pending(families, skip_existing)
    timeline: dict[str, Any] = {"start": time.time(), "tasks": []}
    if todo:
        # Connecting and waiting reach no checkpoint: a signal stops them at once (blocking).
        with interrupts.blocking(), _client(
            distributed, params, scheduler, workers, gpus, connect_timeout, len(todo)
        ) as client:
            timeline["ready"] = time.time()
            for result in _submit_and_collect(distributed, client, todo, params, fmt, memory_cap, progress, on_result,
                                              timeline):
                results[result.input] = result
        _remove_stale_parts(todo)
    timeline["end"] = time.time()
    _report_timeline(timeline, progress)
    return RunSummary(tuple(results[f.input] for f in families), time.perf_counter() - start)


def _submit_and_collect(
    distributed: Any, client: Any, todo: list[Family], params: AlignParams, fmt: str, memory_cap: int | None,
    progress: Progress, on_result: Callable[[FamilyResult], None] | None, timeline: dict[str, Any],
) -> Iterator[FamilyResult]:
    run_id, cwd, since_ns = uuid.uuid4().hex[:8], os.getcwd(), time.time_ns()
    addresses = sorted(client.nthreads())  # every worker (scheduler_info lists 5 in some versions)
    per_host: dict[str, int] = {}
    for address in addresses:
        per_host[_host(address)] = per_host.get(_host(address), 0) + 1
    setup = WorkerSetup(per_host, memory_cap)
    # Each worker's warm-up first (pinned to it, above every group): it overlaps the planning and
    # the submission, and no group pays for it. Not waited for: a worker that died never runs its own.
    warm_ups = [
        client.submit(warm_up_worker, params, setup, key=f"msa-warm-up-{run_id}-{rank}",
                      workers=[address], allow_other_workers=False, priority=len(todo) + 1, pure=False)
        for rank, address in enumerate(addresses)
    ]
    split = [f for f in todo if _splits(f, fmt, len(addresses))]
    groups = plan_groups([f for f in todo if f not in split], len(addresses))
    futures = {}
    for rank, group in enumerate(groups):
        future = client.submit(
            align_group_on_worker, group, params, fmt, cwd, setup, since_ns,
            key=f"msa-align-{os.path.basename(group[0].output)}-{len(group)}-{run_id}-{rank}",
            priority=len(groups) - rank, retries=RETRIES, pure=False,
        )
        futures[future] = group
    timeline |= {"submitted": time.time(), "workers": len(addresses), "groups": [len(g) for g in groups]}
    residues = 0
    try:
        with progress.stage("families", total=len(todo), note=False) as advance:
            done = (_align_split(client, family, params, fmt, cwd, setup, f"{run_id}-{rank}",
                                 addresses, len(groups) + 2, timeline) for rank, family in enumerate(split))
            for result in itertools.chain(done, (
                result for future in distributed.as_completed(futures)
                for result in _results_of(future, futures[future], timeline)
            )):
                residues += result.residues
                if on_result is not None:
                    on_result(result)
                advance(1, description=f"families ({count(residues)} residues)")
                yield result
        timeline["collected"] = time.time()
        for future in warm_ups:
            if future.done() and future.exception() is None:
                _checked(future.result(), timeline)
    finally:
        client.cancel([*futures, *warm_ups], force=True)  # a run that raised leaves nothing running


def _splits(family: Family, fmt: str, workers: int) -> bool:
    """Whether a family is split across the workers (msa.run.split): a large one, in a run of
    several workers, to an uncompressed FASTA file (which the pieces write in place)."""
    from msa.run import split  # local: (b) Numba: the client imports it only where a family may be split

    return workers > 1 and family.size > split.split_family_bytes() and fmt == "fasta" and not family.output.endswith(".gz")


def _align_split(
    client: Any, family: Family, params: AlignParams, fmt: str, cwd: str,
    setup: WorkerSetup, tag: str, addresses: Sequence[str], priority: int, timeline: dict[str, Any],
) -> FamilyResult:
    """One family split across the workers (msa.run.split), its steps as tasks: the plan (read,
    tree, cut) on one worker; each piece's subtrees where Dask places them; the top merges;
    then, the width known, the output opened here at its full size and each piece's rows
    written into it where they were aligned; renamed whole once every piece is in. A task
    that fails fails the family (its one-line error) and leaves no file."""
    from msa.run.split import PIECES_PER_WORKER  # local: (b) Numba: the client imports it only where a family is split

    start = time.perf_counter()
    name = os.path.basename(family.output)
    made: list[Any] = []

    def submit(fn: Callable[..., Any], *args: Any, step: str, on: str | None = None) -> Any:
        """A task; ``on``: the worker it goes to while that worker lives (Dask would keep a
        piece where the plan made it, its data being there; its rows are written where they
        were aligned)."""
        where = {} if on is None else {"workers": [on], "allow_other_workers": True}
        made.append(client.submit(fn, *args, key=f"msa-split-{step}-{name}-{tag}", priority=priority,
                                  retries=RETRIES, pure=False, **where))
        return made[-1]

    planned = submit(split_plan_on_worker, family, params, fmt, cwd, setup, len(addresses) * PIECES_PER_WORKER,
                     step="plan")
    try:
        head, record = submit(_plan_head, planned, step="head").result()
        timeline["tasks"].append(dataclasses.asdict(record))
        stamps = timeline.setdefault("split", {}).setdefault(family.input, {"planned": time.time()})
        if isinstance(head, BackendUnavailable):
            raise head
        if isinstance(head, FamilyResult):
            return head
        pieces = [submit(_plan_piece, planned, p, step=f"piece-{p}") for p in range(len(head.pieces))]
        on = [addresses[p % len(addresses)] for p in range(len(pieces))]
        # Every piece moved to its worker before any is aligned: the plan's worker serves the moves
        # and, once it aligns a piece of its own (Python holding the GIL between launches), serves
        # them slowly (10^7 on 4 H200: the last piece arrived when the plan worker's ended, 49 s on).
        pieces = [submit(_moved, piece, step=f"moved-{p}", on=on[p]) for p, piece in enumerate(pieces)]
        arrived = [submit(_arrived, piece, step=f"arrived-{p}", on=on[p]) for p, piece in enumerate(pieces)]
        aligned = [submit(align_piece_on_worker, piece, head, params, setup, *arrived[:p], *arrived[p + 1:],
                          step=f"align-{p}", on=on[p]) for p, piece in enumerate(pieces)]
        profiles = [submit(_piece_profiles, a, step=f"profiles-{p}") for p, a in enumerate(aligned)]
        top = submit(merge_top_on_worker, head, profiles, params, setup, step="top")
        width = submit(_top_width, top, step="width").result()
        stamps["merged"] = time.time()
        with output(family.output) as out:
            total = head.output_size(width)
            check_space(out, total)
            if not reserve(out.fileno(), 0, total):
                os.ftruncate(out.fileno(), total)
            writes = [submit(write_piece_on_worker, out.path, piece, a, top, params, setup, step=f"write-{p}",
                             on=on[p]) for p, (piece, a) in enumerate(zip(pieces, aligned))]
            records = client.gather([*aligned, top]) + [(None, r) for r in client.gather(writes)]
        stamps["written"] = time.time()
        timeline["tasks"] += [dataclasses.asdict(r) for _, r in records]
    except Exception as exc:  # a task's error, retried and still failing, or the output's
        if isinstance(exc, BackendUnavailable):
            raise
        return FamilyResult(family.input, family.output, "failed", error=family_error(family.input, _Named(
            type(exc).__name__, exc)), seconds=time.perf_counter() - start)
    finally:
        client.cancel(made, force=True)  # the pieces' data go; a family that failed leaves nothing running
    return FamilyResult(family.input, family.output, "done", sequences=head.sequences, residues=head.residues,
                        width=width, seconds=time.perf_counter() - start, seq_type=head.params.seq_type)


def _results_of(future: Any, group: list[Family], timeline: dict[str, Any]) -> list[FamilyResult]:
    """The group's results, or each family failed with the task's one-line error."""
    error = future.exception()
    if error is None:
        results, record = _checked(future.result(), timeline)
        return results
    named = _Named(type(error).__name__, error)
    return [FamilyResult(f.input, f.output, "failed", error=family_error(f.input, named)) for f in group]


class _Named(Exception):
    """A task's error as one line with its type's name first (``KilledWorker: ...``): Dask's
    own errors say little without it."""

    def __init__(self, kind: str, error: BaseException) -> None:
        text = one_line(error)
        super().__init__(text if text.startswith(kind) else f"{kind}: {text}")


def _checked(value: Any, timeline: dict[str, Any]) -> Any:
    """A task's value with its record kept for the timeline; a BackendUnavailable ends the run."""
    if isinstance(value, BackendUnavailable):
        raise value
    record = value if isinstance(value, TaskRecord) else value[1]
    timeline["tasks"].append(dataclasses.asdict(record))
    return value


def _report_timeline(timeline: dict[str, Any], progress: Progress) -> None:
    """The timeline written to ``$MSA_DASK_TIMELINE`` and, with ``-v``, printed per worker."""
    path = os.environ.get(TIMELINE_ENV)
    if path:
        with open(path, "w") as out:
            json.dump(timeline, out, indent=1)
    if progress.verbose:
        for line in timeline_lines(timeline):
            progress.note(line)


def timeline_lines(timeline: Mapping[str, Any]) -> list[str]:
    """The timeline per worker, in seconds from the run's start: the cluster ready, the last
    result, the cluster closed; a split family's plan, top merges and rows done; each worker's span, warm-up, its tasks' stages, and its idle
    time (from the cluster being ready to the last result, less its tasks)."""
    t0 = timeline["start"]
    ready = timeline.get("ready", t0)
    collected = timeline.get("collected", timeline["end"])
    lines = [f"dask: cluster ready at {ready - t0:.1f} s, {timeline.get('workers', 0)} workers, "
             f"tasks of {timeline.get('groups', [])} families, last result at {collected - t0:.1f} s, "
             f"closed at {timeline['end'] - t0:.1f} s"]
    for family, stamps in timeline.get("split", {}).items():
        lines.append(f"dask: {family} split: " + ", ".join(f"{step} at {at - t0:.1f} s" for step, at in stamps.items()))
    by_worker: dict[str, list[Mapping[str, Any]]] = {}
    for task in timeline["tasks"]:
        by_worker.setdefault(task["worker"], []).append(task)
    for worker, tasks in sorted(by_worker.items()):
        warm = sum(t["end"] - t["start"] for t in tasks if t["kind"] == "warm-up")
        groups = [t for t in tasks if t["kind"] != "warm-up"]
        busy = sum(t["end"] - t["start"] for t in tasks)
        stages: dict[str, float] = {}
        for task in groups:
            for name, seconds in task["stages"].items():
                stages[name] = stages.get(name, 0.0) + seconds
        span = f"{min(t['start'] for t in tasks) - t0:.1f}-{max(t['end'] for t in tasks) - t0:.1f} s"
        shown = ", ".join(f"{name} {seconds:.1f}" for name, seconds in stages.items())
        lines.append(
            f"dask: {worker}: {span}, threads {tasks[0]['threads']}, warm-up {warm:.1f} s, "
            f"{len(groups)} tasks of {sum(t['families'] for t in groups)} families "
            f"({shown}; other {busy - warm - sum(stages.values()):.1f} s), "
            f"idle {collected - ready - busy:.1f} s"
        )
    return lines


@contextlib.contextmanager
def _client(
    distributed: Any, params: AlignParams, scheduler: Any, workers: int | None, gpus: int | None,
    connect_timeout: float = CONNECT_TIMEOUT, families: int = 1 << 30,
) -> Iterator[Any]:
    """A client of the given scheduler, or of a local cluster started (and closed) for the run
    of ``families`` families, whose workers' scratch space is a temporary directory removed at
    the end."""
    if scheduler is not None:
        if isinstance(scheduler, distributed.Client):
            yield scheduler
            return
        _reachable(scheduler, connect_timeout)
        try:
            client = distributed.Client(scheduler, timeout=connect_timeout)
        except (OSError, TimeoutError) as exc:
            raise OSError(errno.ETIMEDOUT, f"no answer within {connect_timeout:g} s ({one_line(exc)})", scheduler) from None
        with client:
            yield client
        return
    # No dashboard, and the scheduler's HTTP server on a free port (distributed's default, 8787,
    # may be taken: it warns and moves). Workers log at ERROR when a heartbeat meets the
    # scheduler closing at the end of the run; task failures reach the client as exceptions.
    import dask

    quiet_logs = dict(silence_logs=logging.CRITICAL, dashboard_address=None, scheduler_kwargs={"dashboard_address": ":0"})
    gpu_of = local_gpu_workers(params.device, workers, gpus, families)
    # Dask's dask-scratch-space (of the scheduler, the nannies and the workers) goes with the run.
    with tempfile.TemporaryDirectory(prefix="msa-dask-") as scratch, dask.config.set({"temporary-directory": scratch}):
        if gpu_of:
            cluster = _gpu_cluster(distributed, gpu_of, logging.CRITICAL)
        else:
            assert workers is not None
            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, **quiet_logs)
        with cluster, distributed.Client(cluster) as client:
            yield client


def _reachable(address: str, timeout: float) -> None:
    """A TCP scheduler address answers within ``timeout`` seconds (a scheduler sends its handshake
    as soon as it accepts a connection), or an OSError naming it: a refused port fails at once,
    a server that accepts and stays silent once the time is up (Dask's own connect would wait
    for it without end)."""
    host, _, port = address.removeprefix("tcp://").rpartition(":")
    if ("://" in address and not address.startswith("tcp://")) or not port.isdigit():
        return  # another transport, or no port: Dask checks it
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host.strip("[]") or "localhost", int(port)), timeout=timeout) as probe:
            probe.settimeout(max(deadline - time.monotonic(), 0.01))
            if not probe.recv(1, socket.MSG_PEEK):
                raise OSError(errno.ECONNRESET, "closed the connection without answering", address)
    except socket.timeout:
        raise OSError(errno.ETIMEDOUT, f"no answer within {timeout:g} s", address) from None
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), exc.filename or address) from None


#: Most workers a local cluster puts on one GPU. One worker's Python drives its GPU between
#: launches (a level's host side, the guide tree's host work), which leaves the GPU idle much
#: of the time; more processes fill it. Measured (one H200, 16 cores, 72 families
#: of ~10^4 sequences, default command, outputs byte-identical): one process 98.2 s; 3, 4 and
#: 6 workers on the GPU 58.2, 54.1 and 53.8 s (another machine: 1, 2, 3 workers 136.6, 84.0, 62.9 s).
MAX_WORKERS_PER_GPU = 4
#: Fewest host threads a GPU worker should have (its compiled stages run on them): fewer
#: workers share a GPU on a host with few cores.
MIN_WORKER_THREADS = 4
#: Set in each local GPU worker's environment: how many workers share its GPU (each plans its
#: work within its share of the GPU's memory: :func:`worker_backend`).
GPU_SHARE_ENV = "MSA_GPU_SHARE"


def workers_per_gpu(cores: int, gpus: int) -> int:
    """Workers a local cluster runs on each of ``gpus`` GPUs of a host of ``cores`` cores."""
    return max(1, min(MAX_WORKERS_PER_GPU, cores // max(gpus * MIN_WORKER_THREADS, 1)))


def local_gpu_workers(
    device: str, workers: int | None, gpus: int | None, families: int = 1 << 30, found: int | None = None,
) -> list[int]:
    """The GPU of each worker of a local GPU cluster (an index among the visible GPUs), [] for
    CPU workers (``--device cpu``, or no dask-cuda or GPU, without ``gpus``): ``workers``
    spread over ``gpus`` (or every GPU found) in turn, or :func:`workers_per_gpu` on each but
    no more than the run's ``families`` need (one family, ``-o``: one worker a GPU, with all
    its host's threads). ``found``: the GPUs visible (default: dask-cuda counts them). Raises
    ValueError for more GPUs than are visible."""
    if device == "cpu" and gpus is None:
        return []
    if found is None:
        try:
            from dask_cuda.utils import get_n_gpus

            found = get_n_gpus()
        except Exception:  # no dask-cuda, no driver, no GPU
            found = 0
    if gpus is None:
        gpus = found
    elif gpus > found:
        raise ValueError(f"--gpus {gpus}: {found} GPU{'s are' if found != 1 else ' is'} visible here")
    if not gpus:
        return []
    per_gpu = min(workers_per_gpu(len(os.sched_getaffinity(0)), gpus), -(-max(families, 1) // gpus))
    return [k % gpus for k in range(workers or gpus * per_gpu)]


def _gpu_cluster(distributed: Any, gpu_of: Sequence[int], silence_logs: int) -> Any:
    """A local cluster of GPU workers (Dask's SpecCluster, as dask-cuda's LocalCUDACluster
    builds one, which allows only one worker per GPU): a process of one thread per entry of
    ``gpu_of``, which sees that GPU first (CUDA_VISIBLE_DEVICES), runs on the cores of its GPU's
    NUMA node where dask-cuda can tell them, and knows how many workers share its GPU
    (GPU_SHARE_ENV). Each may use the host's memory as a process of its own would: with 4
    workers a GPU a 1/n share (a LocalCluster's) would let the nanny kill the worker of a 10^7
    family (~10 GB) on a 32 GB host while the others hold little."""
    visible = _visible_gpus(max(gpu_of) + 1)
    common = dict(nthreads=1, host="127.0.0.1", protocol="tcp://", dashboard=False, dashboard_address=None,
                  silence_logs=silence_logs, memory_limit=distributed.system.MEMORY_LIMIT)
    specs = {}
    for k, g in enumerate(gpu_of):
        order = visible[g:] + visible[:g]
        options = dict(common, env={"CUDA_VISIBLE_DEVICES": ",".join(order), GPU_SHARE_ENV: str(gpu_of.count(g))})
        pinned = _affinity(order)
        if pinned is not None:
            options["plugins"] = {pinned}
        specs[f"msa-gpu{g}-{k}"] = {"cls": distributed.Nanny, "options": options}
    scheduler = {"cls": distributed.Scheduler,
                 "options": dict(host="127.0.0.1", protocol="tcp://", dashboard_address=":0")}
    return distributed.SpecCluster(workers=specs, scheduler=scheduler, silence_logs=silence_logs)


def _visible_gpus(count: int) -> list[str]:
    """The GPUs this process may use (its CUDA_VISIBLE_DEVICES, else 0 to ``count`` - 1)."""
    given = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return given or [str(d) for d in range(count)]


def _affinity(order: Sequence[str]) -> Any:
    """dask-cuda's worker plugin that pins a worker to the cores near its GPU (``order[0]``);
    None where dask-cuda is missing or cannot tell."""
    try:
        from dask_cuda.plugins import CPUAffinity
        from dask_cuda.utils import get_cpu_affinity, nvml_device_index

        return CPUAffinity(get_cpu_affinity(nvml_device_index(0, list(order))))
    except Exception:
        return None


def _remove_stale_parts(families: Sequence[Family]) -> None:
    """Temporary files that dead workers left beside the outputs: only those whose marker names a
    process that is gone (msa.io.output.is_stale), never another live run's."""
    folders: dict[str, list[str]] = {}
    for family in families:
        folder, name = os.path.split(family.output)
        folders.setdefault(folder or ".", []).append(name)
    for folder, names in folders.items():
        remove_stale_parts(folder, names)
