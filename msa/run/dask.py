"""The families of a run on a Dask cluster: ``msa align IN... -O DIR --scheduler ADDRESS | --workers N``.

Dask (``distributed``, and ``dask_cuda`` for one worker per GPU) places the
families on workers and retries them; nothing here schedules. Each family is
one task, :func:`align_on_worker`, which calls :func:`msa.run.align_file`
with a backend kept in the worker process (:func:`worker_backend`), so the
device context and the compiled kernels are made once per worker, not once
per family. Workers write each output straight into the output directory
(which they must see at the same path: one machine, or a shared file system)
by a rename, so an output that exists is complete, whatever becomes of its
worker; a worker that dies takes only the family it was aligning, which Dask
runs again on another worker. The outputs are byte-identical to the
single-process run's, on any worker: the parameters are frozen and the
backends keep no state that changes a result.

Dask is an optional extra (``pip install 'msa[dask]'``, ``'msa[dask-gpu]'``
for dask-cuda); this module imports it only when a run asks for it. Beside
:mod:`msa.run.local`; :func:`msa.run.run_families` chooses between them.
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import logging
import os
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from msa._runtime import interrupts
from msa.backends import Backend, BackendUnavailable, get_backend
from msa.io.output import remove_stale_parts
from msa.params import CONNECT_TIMEOUT, AlignParams
from msa.progress import Progress, current
from msa.run.local import align_file
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

    Raises ValueError for none or several of them or ``gpus`` with the CPU
    device, DaskUnavailable without Dask (or without dask-cuda for ``gpus``).
    """
    given = [flag for flag, value in (("--scheduler", scheduler), ("--workers", workers), ("--gpus", gpus))
             if value is not None]
    if len(given) != 1:
        raise ValueError(f"{', '.join(given) or 'no cluster'}: give one of --scheduler, --workers and --gpus")
    if gpus is not None and device == "cpu":
        raise ValueError("--gpus with --device cpu: use --workers N for CPU workers")
    distributed = require_dask(given[0])
    if gpus is not None:
        try:
            import dask_cuda  # noqa: F401
        except ImportError:
            raise DaskUnavailable("--gpus needs dask-cuda: pip install 'msa[dask-gpu]'") from None
    return distributed


# --- on the workers -------------------------------------------------------------------------

_BACKENDS: dict[str, Backend] = {}
#: One family at a time per worker process: a backend (a CUDA context and its streams, Numba's
#: thread count) is not made for concurrent use. Workers should run one thread each (dask-cuda's
#: default; ``dask worker --nthreads 1``); on a worker with more, the others wait here.
_LOCK = threading.Lock()


def worker_backend(device: str) -> Backend:
    """This process's backend for ``device``, started on its first family and kept warm."""
    backend = _BACKENDS.get(device)
    if backend is None:
        backend = _BACKENDS[device] = get_backend(device, quiet=True)
    return backend


def align_on_worker(
    input: str, output: str, params: AlignParams, fmt: str, cwd: str
) -> FamilyResult | BackendUnavailable:
    """The task of one family: :func:`msa.run.align_file` with the worker's warm backend.

    ``input`` and ``output`` are as the user gave them, relative to the
    client's directory ``cwd`` (a worker's own is elsewhere); the result names
    them so. A bad input comes back as a failed FamilyResult, and a backend
    that cannot start as the BackendUnavailable itself, which ends the run:
    values, not exceptions, so that Dask does not retry them.
    """
    where, target = os.path.join(cwd, input), os.path.join(cwd, output)
    with _LOCK:
        try:
            result = align_file(where, target, params, lambda: worker_backend(params.device), fmt)
        except BackendUnavailable as exc:
            return exc
    error = result.error and result.error.replace(where, input).replace(target, output)
    return dataclasses.replace(result, input=input, output=output, error=error)


# --- on the client --------------------------------------------------------------------------


def run_families_dask(
    families: Sequence[Family],
    params: AlignParams,
    *,
    fmt: str = "fasta",
    skip_existing: bool = False,
    scheduler: Any = None,
    workers: int | None = None,
    gpus: int | None = None,
    progress: Progress | None = None,
    on_result: Callable[[FamilyResult], None] | None = None,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> RunSummary:
    """:func:`msa.run.run_families` with each family a task on a Dask cluster.

    Args:
        scheduler: the address of a running cluster's scheduler (or a
            ``distributed.Client``), whose workers see the inputs and the
            output directory at the same paths.
        workers: else start a local cluster for the run: with ``params.device``
            other than cpu, dask-cuda installed and a GPU present, one worker
            per GPU (at most ``workers``); otherwise ``workers`` CPU worker
            processes of one thread each.
        gpus: else a local dask-cuda cluster of this many GPU workers.
        connect_timeout: seconds a scheduler's address has to accept the connection and answer.

    Families go largest input first (task priorities). A family whose task
    still fails after Dask's retries, or whose workers kept dying, is failed
    with that one-line error. Stale ``.part`` files of dead workers are removed
    at the end. Raises DaskUnavailable without Dask, BackendUnavailable when a
    worker cannot start the device.
    """
    distributed = check_options(params.device, scheduler, workers, gpus)
    start = time.perf_counter()
    progress = progress or current()
    results, todo = pending(families, skip_existing)
    if todo:
        # Connecting and waiting reach no checkpoint: a signal stops them at once (blocking).
        with interrupts.blocking(), _client(distributed, params, scheduler, workers, gpus, connect_timeout) as (
            client, params
        ):
            for result in _submit_and_collect(distributed, client, todo, params, fmt, progress, on_result):
                results[result.input] = result
        _remove_stale_parts(todo)
    return RunSummary(tuple(results[f.input] for f in families), time.perf_counter() - start)


def _submit_and_collect(
    distributed: Any, client: Any, todo: list[Family], params: AlignParams, fmt: str, progress: Progress,
    on_result: Callable[[FamilyResult], None] | None,
) -> Iterator[FamilyResult]:
    run_id, cwd = uuid.uuid4().hex[:8], os.getcwd()
    futures = {}
    for rank, family in enumerate(todo):
        future = client.submit(
            align_on_worker, family.input, family.output, params, fmt, cwd,
            key=f"msa-align-{os.path.basename(family.output)}-{run_id}-{rank}",
            priority=len(todo) - rank, retries=RETRIES, pure=False,
        )
        futures[future] = family
    residues = 0
    try:
        with progress.stage("families", total=len(todo), note=False) as advance:
            for future in distributed.as_completed(futures):
                family = futures[future]
                result = _result_of(future, family)
                residues += result.residues
                if on_result is not None:
                    on_result(result)
                advance(1, description=f"families ({count(residues)} residues)")
                yield result
    finally:
        client.cancel(list(futures), force=True)  # a run that raised leaves nothing running


def _result_of(future: Any, family: Family) -> FamilyResult:
    """The family's result, or failed with the task's one-line error (BackendUnavailable ends the run)."""
    error = future.exception()
    if error is None:
        result = future.result()
        if isinstance(result, BackendUnavailable):
            raise result
        return result
    name = type(error).__name__
    return FamilyResult(family.input, family.output, "failed", error=family_error(family.input, _Named(name, error)))


class _Named(Exception):
    """A task's error as one line with its type (``KilledWorker: ...``)."""

    def __init__(self, name: str, error: BaseException) -> None:
        super().__init__(f"{name}: {error}" if str(error) else name)


@contextlib.contextmanager
def _client(
    distributed: Any, params: AlignParams, scheduler: Any, workers: int | None, gpus: int | None,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> Iterator[tuple[Any, AlignParams]]:
    """A client of the given scheduler, or of a local cluster started (and closed) for the run,
    whose workers' scratch space is a temporary directory removed at the end."""
    if scheduler is not None:
        if isinstance(scheduler, distributed.Client):
            yield scheduler, params
            return
        _reachable(scheduler, connect_timeout)
        try:
            client = distributed.Client(scheduler, timeout=connect_timeout)
        except (OSError, TimeoutError) as exc:
            raise OSError(errno.ETIMEDOUT, f"no answer within {connect_timeout:g} s ({one_line(exc)})", scheduler) from None
        with client:
            yield client, params
        return
    # No dashboard, and the scheduler's HTTP server on a free port (distributed's default, 8787,
    # may be taken: it warns and moves). Workers log at ERROR when a heartbeat meets the
    # scheduler closing at the end of the run; task failures reach the client as exceptions.
    import dask

    quiet_logs = dict(silence_logs=logging.CRITICAL, dashboard_address=None, scheduler_kwargs={"dashboard_address": ":0"})
    cuda = _local_cuda_workers(params.device, workers, gpus)
    # Dask's dask-scratch-space (of the scheduler, the nannies and the workers) goes with the run.
    with tempfile.TemporaryDirectory(prefix="msa-dask-") as scratch, dask.config.set({"temporary-directory": scratch}):
        if cuda:
            from dask_cuda import LocalCUDACluster

            cluster = LocalCUDACluster(n_workers=cuda, threads_per_worker=1, **quiet_logs)
        else:
            assert workers is not None
            if params.threads == 0:  # "every core", shared among the workers
                params = params.with_(threads=max(1, (os.cpu_count() or 1) // workers))
            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, **quiet_logs)
        with cluster, distributed.Client(cluster) as client:
            yield client, params


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


def _local_cuda_workers(device: str, workers: int | None, gpus: int | None) -> int:
    """GPU workers of the local cluster: ``gpus``, or for ``workers`` one per GPU (at most that many)
    where dask-cuda is installed, the device is not cpu and a GPU is present; 0 for CPU workers."""
    if gpus is not None:
        return gpus
    if device == "cpu":
        return 0
    try:
        from dask_cuda.utils import get_n_gpus

        found = get_n_gpus()
    except Exception:  # no dask-cuda, no driver, no GPU
        return 0
    return min(found, workers or found)


def _remove_stale_parts(families: Sequence[Family]) -> None:
    """Temporary files that dead workers left beside the outputs: only those whose marker names a
    process that is gone (msa.io.output.is_stale), never another live run's."""
    folders: dict[str, list[str]] = {}
    for family in families:
        folder, name = os.path.split(family.output)
        folders.setdefault(folder or ".", []).append(name)
    for folder, names in folders.items():
        remove_stale_parts(folder, names)
