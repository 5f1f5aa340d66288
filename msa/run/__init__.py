"""The run layer: what a command or :func:`align_files` runs, from the plan to the outputs.

* :mod:`msa.run.plan`: the families of a run, their output paths, and the
  check that no path written is one read or another written (before any work);
* :mod:`msa.run.local`: families aligned in this process with one backend
  (:func:`align_file` is one family);
* :mod:`msa.run.dask`: the same families as tasks on a Dask cluster;
* :mod:`msa.run.single`: runs with one output (``msa align -o``, ``msa tree``),
  :mod:`msa.run.profiles`: ``msa add`` and ``msa merge``;
* here, :func:`run_families`: the one choice between this process and a cluster.

The run layer starts the backend (msa._runtime.startup) and writes the
outputs; the CLI (msa.cli) parses options and reports results. Below it is
:mod:`msa.pipeline` (one family, in memory).
"""
from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from msa.params import CONNECT_TIMEOUT, AlignParams
from msa.progress import Progress
from msa.run.results import FamilyResult, RunSummary, one_line

if TYPE_CHECKING:
    from msa.run.local import BackendLike, align_file, run_local
    from msa.run.plan import (
        Family, check_paths, expand_inputs, make_output_dir, output_name, plan_run, tree_file_read,
    )
    from msa.run.single import AlignedOne, align_one, align_one_on_cluster, tree_one

#: Where each name of the steps' modules lives: they load on first use (PEP 562), since they
#: import NumPy (msa.io), and the CLI imports this package for commands that may align
#: nothing (``--help``, an argument's error: docs/start-up.md).
_HOMES = {
    "BackendLike": "msa.run.local", "align_file": "msa.run.local", "run_local": "msa.run.local",
    "Family": "msa.run.plan", "check_paths": "msa.run.plan", "expand_inputs": "msa.run.plan",
    "make_output_dir": "msa.run.plan", "output_name": "msa.run.plan", "plan_run": "msa.run.plan",
    "tree_file_read": "msa.run.plan",
    "AlignedOne": "msa.run.single", "align_one": "msa.run.single", "align_one_on_cluster": "msa.run.single",
    "tree_one": "msa.run.single",
}

__all__ = [
    "AlignedOne", "Family", "FamilyResult", "RunSummary", "align_file", "align_files", "check_paths", "cluster_options",
    "expand_inputs", "make_output_dir", "one_line", "output_name", "plan_run", "run_families", "tree_file_read", "tree_one", "align_one",
    "align_one_on_cluster",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'msa.run' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


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
    gpus: int | None = None,
    **options: object,
) -> RunSummary:
    """Align each input file (or each file of an input directory) into ``output_dir``.

    Nothing is printed: notes are records of the ``msa`` logger (as :func:`msa.align`'s).

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
        scheduler, workers, gpus: a Dask cluster's scheduler address (or a
            ``distributed.Client``), or a local cluster to start (a number of
            workers, of GPUs, or both: ``--workers``/``--gpus``): the families go
            to Dask workers, each with its own backend
            (:func:`msa.run.dask.run_families_dask`; needs ``msa[dask]``).

    Returns:
        A RunSummary; a family that failed has its one-line error there and
        leaves no file. Raises only for the run as a whole: ValueError or
        OSError for bad inputs, an output that would replace an input, or an
        output directory that cannot be written (before any work),
        BackendUnavailable for the device.

    Example:
        >>> summary = align_files(["in/PF00078.fa", "in/PF00079.fa"], "out", device="cpu")  # doctest: +SKIP
        >>> len(summary.done), [r.error for r in summary.failed]  # doctest: +SKIP
        (2, [])
    """
    from msa.run.plan import plan_run, tree_file_read  # local: (c) NumPy: msa.run loads its steps on first use (docs/start-up.md, "Commands that align nothing")

    params = (params or AlignParams()).with_(**options)
    cluster = cluster_options(params.device, scheduler=scheduler, workers=workers, gpus=gpus)
    families = plan_run(inputs, output_dir, fmt=fmt, gzip=gzip, reads=tree_file_read(params))
    return run_families(families, params, fmt=fmt, skip_existing=skip_existing, backend=backend, cluster=cluster)


def run_families(
    families: Sequence[Family],
    params: AlignParams,
    *,
    fmt: str = "fasta",
    skip_existing: bool = False,
    backend: BackendLike = None,
    cluster: Mapping[str, Any] | None = None,
    early_start: bool = False,
    memory_cap: int | None = None,
    progress: Progress | None = None,
    on_result: Callable[[FamilyResult], None] | None = None,
) -> RunSummary:
    """Align planned families (:func:`plan_run`) in this process, or with ``cluster`` (from
    :func:`cluster_options`) on Dask's workers, each with its own backend: the one place that
    chooses. ``backend`` and ``early_start`` are this process's (:func:`msa.run.local.run_local`),
    ``memory_cap`` (``--gpu-memory``) this process's or each worker's; ``progress`` draws one bar over the families and
    ``on_result`` hears of each family as it ends."""
    if cluster:
        from msa.run.dask import run_families_dask  # local: (c) NumPy: msa.run loads its steps on first use (docs/start-up.md, "Commands that align nothing")

        return run_families_dask(
            families, params, fmt=fmt, skip_existing=skip_existing, memory_cap=memory_cap, progress=progress,
            on_result=on_result, **cluster,
        )
    from msa.run.local import run_local  # local: (c) NumPy: msa.run loads its steps on first use (docs/start-up.md, "Commands that align nothing")

    return run_local(
        families, params, fmt=fmt, skip_existing=skip_existing, backend=backend, early_start=early_start,
        memory_cap=memory_cap, progress=progress, on_result=on_result,
    )


def cluster_options(
    device: str, *, scheduler: Any = None, workers: int | None = None, gpus: int | None = None,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> dict[str, Any] | None:
    """The cluster a run asks for, as :func:`run_families`'s ``cluster``, checked before any
    work (one of them, Dask installed: msa.run.dask.check_options); None for this process.
    ``connect_timeout`` bounds the wait for a ``scheduler``'s connection and first answer."""
    given = {k: v for k, v in (("scheduler", scheduler), ("workers", workers), ("gpus", gpus)) if v is not None}
    if not given:
        return None
    from msa.run.dask import check_options  # local: (c) NumPy: msa.run loads its steps on first use (docs/start-up.md, "Commands that align nothing")

    check_options(device, **given)
    return given | ({"connect_timeout": connect_timeout} if scheduler is not None else {})

