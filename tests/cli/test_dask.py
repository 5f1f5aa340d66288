"""``msa align IN... -O DIR --scheduler ADDRESS | --workers N``: the families on Dask workers.

Each output must be byte-identical to the single-process run's, the summary the
same, and a worker that dies must lose nothing. One LocalCluster (2 worker
processes of one thread) serves the module; the tests skip where Dask is absent,
except the one-line error without it.
"""
from __future__ import annotations

import importlib.util
import logging
import os
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "examples" / "example.fa"

#: Good families (input name -> records of the example, 6 to 30 sequences) and their output names.
GOOD = {"PF00001.30": (0, 30), "fam_b.fasta": (30, 42), "fam_c.fa": (42, 48), "fam_d.faa": (48, 70)}
OUTPUT = {"PF00001.30": "PF00001.30.fa", "fam_b.fasta": "fam_b.fa", "fam_c.fa": "fam_c.fa", "fam_d.faa": "fam_d.fa"}
BAD = {"bad.fa": b">x\nMK1V\n", "empty.fa": b""}

#: Skips before any fixture runs where Dask is not installed (CI installs it with the test extra).
needs_dask = pytest.mark.skipif(importlib.util.find_spec("distributed") is None, reason="Dask is not installed")


def write_inputs(folder: Path, bad: bool = True) -> list[str]:
    """The good (and bad) families in ``folder``; their names, sorted."""
    records = [b">" + r for r in EXAMPLE.read_bytes().split(b">")[1:]]
    for name, (lo, hi) in GOOD.items():
        (folder / name).write_bytes(b"".join(records[lo:hi]))
    if bad:
        for name, data in BAD.items():
            (folder / name).write_bytes(data)
    return sorted([*GOOD, *BAD] if bad else GOOD)


def error_lines(stderr: bytes) -> list[str]:
    return [line for line in stderr.decode().splitlines() if line.startswith("msa: error: ")]


@pytest.fixture(scope="module")
def single(run_msa, tmp_path_factory) -> tuple[dict[str, bytes], list[str]]:
    """The single-process run (``-O``) of the good and bad families: each output's bytes, the error lines."""
    cwd = tmp_path_factory.mktemp("single")
    inputs = write_inputs(cwd)
    result = run_msa("align", *inputs, "-O", "out", "--device", "cpu", cwd=cwd)
    assert result.returncode == 1, result.stderr.decode()
    outputs = {name: (cwd / "out" / OUTPUT[name]).read_bytes() for name in GOOD}
    return outputs, error_lines(result.stderr)


#: Seconds to wait for a nanny to bring back a worker a test killed: a new worker process imports
#: NumPy, Numba and msa again, which takes well over a minute on a loaded 2-core machine.
RESTART_S = 600


@pytest.fixture(scope="module")
def cluster_client():
    """A client of one LocalCluster for the module: 2 worker processes, one thread each."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.ERROR
    ) as cluster, distributed.Client(cluster) as client:
        yield client


@pytest.fixture
def client(cluster_client):
    """The module's client once both workers run, so a test never starts while a worker an
    earlier test killed is still being restarted."""
    cluster_client.wait_for_workers(2, timeout=RESTART_S)
    return cluster_client


def assert_outputs(out: Path, single: dict[str, bytes]) -> None:
    assert sorted(os.listdir(out)) == sorted(OUTPUT.values())  # nothing for bad inputs, no .part file
    for name in GOOD:
        assert (out / OUTPUT[name]).read_bytes() == single[name], name


@needs_dask
def test_scheduler_run_matches_the_single_process_run(run_msa, single, client, tmp_path: Path) -> None:
    """Good and bad files over 2 workers: identical outputs, the same error lines and exit status."""
    outputs, single_errors = single
    inputs = write_inputs(tmp_path)
    result = run_msa("align", *inputs, "-O", "out", "--device", "cpu", "--scheduler", client.scheduler.address,
                     cwd=tmp_path)
    err = result.stderr.decode()
    assert result.returncode == 1 and result.stdout == b"" and "Traceback" not in err, err
    lines = error_lines(result.stderr)
    # Failures are reported as they end (the order may differ); the last line is the count.
    assert sorted(lines[:-1]) == sorted(single_errors[:-1]) and lines[-1] == single_errors[-1], err
    assert len(lines) == len(BAD) + 1 and lines[-1] == f"msa: error: {len(BAD)} of {len(inputs)} families failed"
    assert f"aligned {len(GOOD)} of {len(inputs)} families" in err
    assert_outputs(tmp_path / "out", outputs)


@needs_dask
def test_python_api_on_a_client_keeps_input_order_and_resumes(single, client, tmp_path: Path) -> None:
    from msa import align_files

    outputs, _ = single
    inputs = [tmp_path / name for name in write_inputs(tmp_path)]
    summary = align_files(inputs, tmp_path / "out", scheduler=client, device="cpu")
    assert [Path(r.input).name for r in summary.results] == [p.name for p in inputs]  # input order
    assert sorted(Path(r.input).name for r in summary.failed) == sorted(BAD)
    assert all(r.error and r.error.startswith(r.input + ": ") for r in summary.failed)
    assert len(summary.done) == len(GOOD) and not summary.skipped
    assert_outputs(tmp_path / "out", outputs)
    again = align_files(inputs, tmp_path / "out", scheduler=client.scheduler.address, skip_existing=True, device="cpu")
    assert len(again.skipped) == len(GOOD) and len(again.failed) == len(BAD) and not again.done


@needs_dask
def test_workers_flag_starts_a_local_cluster(run_msa, single, tmp_path: Path) -> None:
    """--workers 2 (CPU worker processes, started and closed by the run) with --skip-existing; -v
    prints the timeline."""
    pytest.importorskip("distributed")
    outputs, _ = single
    inputs = write_inputs(tmp_path, bad=False)
    (tmp_path / "out").mkdir()
    kept = tmp_path / "out" / OUTPUT[inputs[0]]
    kept.write_bytes(b"kept as it is\n")
    result = run_msa("align", *inputs, "-O", "out", "--device", "cpu", "--workers", "2", "--skip-existing", "-v",
                     cwd=tmp_path)
    err = result.stderr.decode()
    assert result.returncode == 0 and "msa: error" not in err and "Traceback" not in err, err
    assert "msa: dask: cluster ready at" in err and ", warm-up " in err, err  # -v: the timeline per worker
    assert f"aligned {len(GOOD) - 1} of {len(GOOD)} families" in err and "1 skipped" in err, err
    assert kept.read_bytes() == b"kept as it is\n"
    kept.write_bytes(outputs[inputs[0]])
    assert_outputs(tmp_path / "out", outputs)


def _kill_once_plugin(marker: str, at_write: int = 1):
    """A worker plugin (test-only) that kills its worker process while it writes its ``at_write``-th
    output: ``marker`` (made atomically) names the ``.part`` file it left, then each output already
    whole in that folder with its inode. Defined in a function so that cloudpickle sends it by value."""
    from distributed import WorkerPlugin

    class KillWhileWriting(WorkerPlugin):
        name = "msa-test-kill-once"

        def setup(self, worker) -> None:
            import msa.run.local

            original = self.original = msa.run.local.write_alignment
            writes = 0

            def write_then_die(out, aligned, fmt, backend=None):
                nonlocal writes
                writes += 1
                if writes < at_write:
                    return original(out, aligned, fmt, backend)
                try:
                    fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
                except FileExistsError:  # killed once already
                    return original(out, aligned, fmt, backend)
                out.write(b">half an alignment\nMKV")
                out.flush()
                part = os.readlink(f"/proc/self/fd/{out.fileno()}")  # the .part file (Linux)
                folder = os.path.dirname(part)
                whole = [f"{name} {os.stat(os.path.join(folder, name)).st_ino}" for name in sorted(os.listdir(folder))
                         if not name.startswith(".")]
                os.write(fd, "\n".join([part, *whole]).encode())
                os.close(fd)
                os._exit(1)

            msa.run.local.write_alignment = write_then_die

        def teardown(self, worker) -> None:
            import msa.run.local

            msa.run.local.write_alignment = self.original

    return KillWhileWriting()


@needs_dask
def test_a_killed_worker_loses_nothing(run_msa, single, client, tmp_path: Path) -> None:
    """A worker dies halfway through writing a family: Dask runs the family again on a worker, its
    output is complete and identical, and the dead worker's .part file is gone."""
    outputs, _ = single
    inputs = write_inputs(tmp_path, bad=False)
    marker = tmp_path / "killed"
    client.register_plugin(_kill_once_plugin(str(marker)))
    try:
        result = run_msa("align", *inputs, "-O", "out", "--device", "cpu", "--scheduler",
                         client.scheduler.address, cwd=tmp_path)
    finally:
        client.unregister_worker_plugin("msa-test-kill-once")
    err = result.stderr.decode()
    assert result.returncode == 0 and "msa: error" not in err, err
    assert f"aligned {len(GOOD)} of {len(GOOD)} families" in err
    part = Path(marker.read_text().splitlines()[0])  # a worker did die while writing this one
    assert part.parent == tmp_path / "out" and part.name.endswith(".part") and not part.exists()
    assert_outputs(tmp_path / "out", outputs)


def test_groups_cover_each_family_once_largest_first_in_any_input_order() -> None:
    """Large families alone, small ones packed into groups of at most one batch, about
    TASKS_PER_WORKER tasks per worker, the largest task first; the same plan for any input order."""
    from msa.run.dask import BATCH_RESIDUES, SMALL_FAMILY_RESIDUES, TASKS_PER_WORKER, plan_groups
    from msa.run.plan import Family

    large = [Family(f"big{i}", f"out/big{i}", SMALL_FAMILY_RESIDUES + 1 + i) for i in range(3)]
    small = [Family(f"s{i:03d}", f"out/s{i:03d}", 1000 + (i * 7919) % 50000) for i in range(200)]
    families = [*small[:50], *large, *small[50:], Family("unreadable", "out/unreadable", -1)]
    groups = plan_groups(families, 2)
    assert sorted(f.input for g in groups for f in g) == sorted(f.input for f in families)  # each once
    assert plan_groups(families[::-1], 2) == groups
    assert groups[:3] == [[f] for f in large[::-1]]  # alone, largest first
    totals = [sum(max(f.size, 0) for f in g) for g in groups]
    assert totals == sorted(totals, reverse=True) and all(len(g) > 1 for g in groups[3:-1])
    assert 2 * TASKS_PER_WORKER <= len(groups) <= 2 * TASKS_PER_WORKER + 2, [len(g) for g in groups]
    many = [Family(f"f{i:03d}", f"out/f{i:03d}", 1 << 20) for i in range(144)]  # 144 MB of small families
    assert all(sum(f.size for f in g) <= BATCH_RESIDUES for g in plan_groups(many, 2))
    assert len(plan_groups(many, 2)) == 144 * (1 << 20) // BATCH_RESIDUES


def test_worker_threads_are_a_share_of_the_hosts_cores() -> None:
    from msa.run.dask import worker_threads

    assert [worker_threads(0, 32, 2), worker_threads(0, 32, 3), worker_threads(0, 2, 4)] == [16, 10, 1]
    assert worker_threads(0, 32, 2, allowed=8) == 8  # pinned to 8 cores
    assert worker_threads(6, 32, 2, allowed=4) == 6  # --threads given


def test_local_gpu_workers_fill_each_gpu_with_several() -> None:
    """--gpus N: workers_per_gpu on each GPU (fewer where cores are few, or families); --workers W
    spread over the GPUs in turn; more GPUs than are visible is a ValueError; CPU workers
    without GPUs."""
    from msa.run.dask import MAX_WORKERS_PER_GPU, local_gpu_workers, workers_per_gpu

    assert [workers_per_gpu(16, 1), workers_per_gpu(64, 4), workers_per_gpu(8, 1), workers_per_gpu(2, 1)] == [
        MAX_WORKERS_PER_GPU, MAX_WORKERS_PER_GPU, 2, 1]
    assert local_gpu_workers("cuda", 5, None, found=2) == [0, 1, 0, 1, 0]
    assert local_gpu_workers("auto", 3, 1, found=4) == [0, 0, 0]
    per = workers_per_gpu(len(os.sched_getaffinity(0)), 2)
    assert local_gpu_workers("cuda", None, 2, found=2) == [0, 1] * per
    assert local_gpu_workers("cuda", None, 2, families=1, found=2) == [0, 1]  # -o: one family, a worker a GPU
    assert local_gpu_workers("cuda", 2, None, found=0) == [] and local_gpu_workers("cpu", 2, None, found=2) == []
    with pytest.raises(ValueError, match="--gpus 3: 2 GPUs are visible here"):
        local_gpu_workers("cuda", None, 3, found=2)


def test_only_a_worker_sharing_a_gpu_plans_within_a_share(monkeypatch) -> None:
    import msa.run.dask as run_dask
    from msa.backends.cpu import CpuBackend

    class Planned:
        memory_limit = 1 << 40

    monkeypatch.delenv(run_dask.GPU_SHARE_ENV, raising=False)
    alone = Planned()
    run_dask._plan_within_share(alone)
    assert alone.memory_limit == 1 << 40
    monkeypatch.setenv(run_dask.GPU_SHARE_ENV, "3")
    run_dask._plan_within_share(CpuBackend())  # no device memory to share (on a GPU: tests/gpu/test_dask_gpu.py)


@needs_dask
def test_workers_sharing_a_gpu_match_the_single_process_run(single, tmp_path: Path) -> None:
    """The local GPU cluster (two workers on "GPU 0"; here the CPU backend aligns): each worker
    sees its GPU first, knows it shares it and may use the host's memory; the outputs are the
    single process's."""
    import distributed

    import msa.run.dask as run_dask
    from msa import align_files

    outputs, _ = single
    inputs = [tmp_path / name for name in write_inputs(tmp_path, bad=False)]
    with run_dask._gpu_cluster(distributed, [0, 0], logging.ERROR) as cluster, distributed.Client(cluster) as client:
        env = client.run(lambda: (os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get(run_dask.GPU_SHARE_ENV)))
        limits = client.run(lambda dask_worker: dask_worker.memory_manager.memory_limit)
        summary = align_files(inputs, tmp_path / "out", scheduler=client, device="cpu")
    visible = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")
    assert sorted(env.values()) == [(",".join(visible), "2")] * 2
    assert list(limits.values()) == [distributed.system.MEMORY_LIMIT] * 2  # each as a process of its own
    assert len(summary.done) == len(GOOD)
    assert_outputs(tmp_path / "out", outputs)


@needs_dask
def test_groups_on_workers_match_the_single_process_run(single, client, tmp_path: Path, monkeypatch) -> None:
    """The two largest files alone, the others in groups, one with a good family and both bad ones:
    the same outputs and errors as one process, each bad family failed alone; every task's
    threads are its worker's share of the cores (2 workers on this host); the timeline file."""
    import json

    import msa.run.dask as run_dask
    from msa import align_files

    outputs, single_errors = single
    inputs = [tmp_path / name for name in write_inputs(tmp_path)]
    monkeypatch.setattr(run_dask, "SMALL_FAMILY_RESIDUES", sorted(p.stat().st_size for p in inputs)[-3])
    monkeypatch.setattr(run_dask, "TASKS_PER_WORKER", 1)
    monkeypatch.setenv(run_dask.TIMELINE_ENV, str(tmp_path / "timeline.json"))
    summary = align_files(inputs, tmp_path / "out", scheduler=client, device="cpu")
    timeline = json.loads((tmp_path / "timeline.json").read_text())
    assert timeline["groups"] == [1, 1, 1, 3], timeline["groups"]  # fam_c.fa with bad.fa and empty.fa
    assert sorted(Path(r.input).name for r in summary.failed) == sorted(BAD)
    errors = [f"msa: error: {r.error}".replace(f"{tmp_path}/", "") for r in summary.failed]
    assert sorted(errors) == sorted(single_errors[:-1])
    assert_outputs(tmp_path / "out", outputs)
    share = run_dask.worker_threads(0, os.cpu_count() or 1, 2, len(os.sched_getaffinity(0)))
    tasks = [t for t in timeline["tasks"] if t["kind"] == "group"]
    assert len(tasks) == 4 and {t["threads"] for t in tasks} == {share}
    assert sum(t["families"] for t in tasks) == len(inputs) and all("reading" in t["stages"] for t in tasks)


@needs_dask
def test_a_group_run_again_keeps_the_outputs_already_whole(single, client, tmp_path: Path, monkeypatch) -> None:
    """One group of every family; its worker dies writing the second output: the group runs again
    elsewhere, leaves the first output as it is (the same file), writes the others whole."""
    import msa.run.dask as run_dask
    from msa import align_files

    outputs, _ = single
    inputs = [tmp_path / name for name in write_inputs(tmp_path, bad=False)]
    monkeypatch.setattr(run_dask, "plan_groups", lambda todo, workers: [list(todo)])
    marker = tmp_path / "killed"
    client.register_plugin(_kill_once_plugin(str(marker), at_write=2))
    try:
        summary = align_files(inputs, tmp_path / "out", scheduler=client, device="cpu")
    finally:
        client.unregister_worker_plugin("msa-test-kill-once")
    assert len(summary.done) == len(GOOD) and not summary.failed
    part, *whole = marker.read_text().splitlines()
    assert Path(part).name.endswith(".part") and not Path(part).exists() and len(whole) == 1
    name, inode = whole[0].split()
    assert (tmp_path / "out" / name).stat().st_ino == int(inode)  # not written again
    assert_outputs(tmp_path / "out", outputs)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workers", "2"], "--workers needs Dask: pip install 'msa[dask]'"),
        (["--scheduler", "tcp://127.0.0.1:8786"], "--scheduler needs Dask: pip install 'msa[dask]'"),
        (["--gpus", "2"], "--gpus needs Dask: pip install 'msa[dask]'"),
    ],
)
def test_cluster_flags_without_dask_are_one_line_errors(monkeypatch, capsys, tmp_path: Path, args, message) -> None:
    from msa.cli import app

    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed raises ImportError
    monkeypatch.setitem(sys.modules, "dask_cuda", None)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.fa").write_bytes(b">a\nMKV\n>b\nMKLV\n")
    with pytest.raises(SystemExit) as exit_info:
        app(["align", "a.fa", "-O", "out", *args], prog_name="msa")
    assert exit_info.value.code == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"msa: error: {message}\n"
    assert os.listdir(tmp_path) == ["a.fa"]  # before any work: no output directory


# --- one family split across the workers (msa.run.split) ------------------------------------


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> tuple[Path, bytes, bytes]:
    """A family with duplicates (the example, then each record again under another name), and its
    one-process outputs without refinement and with it (``--refine auto`` refines its 200
    distinct sequences)."""
    from msa import align_files

    folder = tmp_path_factory.mktemp("big")
    data = EXAMPLE.read_bytes()
    (folder / "big.fa").write_bytes(data + data.replace(b">", b">again_"))
    assert align_files([folder / "big.fa"], folder / "off", device="cpu", refine="off").ok
    assert align_files([folder / "big.fa"], folder / "auto", device="cpu").ok
    return folder / "big.fa", (folder / "off" / "big.fa").read_bytes(), (folder / "auto" / "big.fa").read_bytes()


def _split_kill_plugin(marker: str, where: str):
    """A worker plugin (test-only) that kills its worker once, in msa.run.split's ``where``
    (``align_piece``; ``write_piece`` after writing its rows with every residue an ``X``, so that
    only its rerun can make the output right)."""
    from distributed import WorkerPlugin

    class KillInSplit(WorkerPlugin):
        name = "msa-test-kill-split"

        def setup(self, worker) -> None:
            import dataclasses

            import numpy as np

            import msa.run.split

            original = self.original = getattr(msa.run.split, where)

            def die_once(*args):
                try:
                    os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
                except FileExistsError:  # killed once already
                    return original(*args)
                if where == "write_piece":
                    path, piece, *rest = args
                    dbs = [dataclasses.replace(db, residues=np.full_like(db.residues, ord("X"))) for db in piece.dbs]
                    original(path, dataclasses.replace(piece, dbs=dbs), *rest)
                os._exit(1)

            setattr(msa.run.split, where, die_once)

        def teardown(self, worker) -> None:
            import msa.run.split

            setattr(msa.run.split, where, self.original)

    return KillInSplit()


@needs_dask
@pytest.mark.parametrize("where", [None, "align_piece", "write_piece"])
def test_a_split_family_is_the_one_process_output(big, client, tmp_path: Path, monkeypatch, where) -> None:
    """A family over the split size on 2 workers: planned on one, its pieces aligned and written
    on both, byte-identical to the one-process run; a worker killed while it aligns or writes
    a piece loses nothing (Dask runs what it held again) and leaves no file but the output."""
    import json

    import msa.run.dask as run_dask
    import msa.run.split as run_split
    from msa import align_files

    path, expected, _ = big
    monkeypatch.setattr(run_split, "SPLIT_FAMILY_BYTES", 1000)
    monkeypatch.setenv(run_dask.TIMELINE_ENV, str(tmp_path / "timeline.json"))
    marker = tmp_path / "killed"
    if where:
        client.register_plugin(_split_kill_plugin(str(marker), where))
    try:
        summary = align_files([path], tmp_path / "out", scheduler=client, device="cpu", refine="off")
    finally:
        if where:
            client.unregister_worker_plugin("msa-test-kill-split")
    assert summary.ok and summary.done[0].sequences == 400, summary
    assert os.listdir(tmp_path / "out") == ["big.fa"]  # no .part file
    assert (tmp_path / "out" / "big.fa").read_bytes() == expected
    tasks = json.loads((tmp_path / "timeline.json").read_text())["tasks"]
    kinds = {t["kind"] for t in tasks}
    assert {"split plan", "split piece", "split top", "split write"} <= kinds, kinds
    if where:
        assert marker.exists()
    else:
        assert len({t["worker"] for t in tasks if t["kind"] == "split piece"}) == 2  # both aligned pieces


def _split_order_plugin(log: str):
    """A worker plugin (test-only) that notes when each piece has arrived on its worker
    (msa.run.dask._arrived) and when each piece's alignment begins (msa.run.split.align_piece)."""
    from distributed import WorkerPlugin

    class NoteSplitOrder(WorkerPlugin):
        name = "msa-test-split-order"

        def setup(self, worker) -> None:
            import time

            import msa.run.dask
            import msa.run.split

            self.originals = msa.run.dask._arrived, msa.run.split.align_piece

            def noted(what, original):
                def call(*args):
                    with open(log, "a") as out:
                        out.write(f"{what} {time.time()}\n")
                    return original(*args)
                return call

            msa.run.dask._arrived = noted("arrived", self.originals[0])
            msa.run.split.align_piece = noted("align", self.originals[1])

        def teardown(self, worker) -> None:
            import msa.run.dask
            import msa.run.split

            msa.run.dask._arrived, msa.run.split.align_piece = self.originals

    return NoteSplitOrder()


@needs_dask
def test_a_split_familys_pieces_all_move_before_any_is_aligned(big, client, tmp_path: Path, monkeypatch) -> None:
    """The plan's worker holds every piece; each moves to its worker before any piece is
    aligned, so that no move waits on the plan worker's own alignment (Python there holds the GIL)."""
    import msa.run.split as run_split
    from msa import align_files

    path, expected, _ = big
    monkeypatch.setattr(run_split, "SPLIT_FAMILY_BYTES", 1000)
    log = tmp_path / "order.log"
    client.register_plugin(_split_order_plugin(str(log)))
    try:
        assert align_files([path], tmp_path / "out", scheduler=client, device="cpu", refine="off").ok
    finally:
        client.unregister_worker_plugin("msa-test-split-order")
    assert (tmp_path / "out" / "big.fa").read_bytes() == expected
    notes = [line.split() for line in log.read_text().splitlines()]
    arrived = [float(t) for what, t in notes if what == "arrived"]
    aligns = [float(t) for what, t in notes if what == "align"]
    assert len(arrived) == len(aligns) == 2
    assert max(arrived) <= min(aligns)


@needs_dask
def test_a_family_to_refine_is_aligned_whole_on_one_worker(big, client, tmp_path: Path, monkeypatch) -> None:
    """Refinement needs the whole alignment: the plan's worker aligns such a family itself."""
    import json

    import msa.run.dask as run_dask
    import msa.run.split as run_split
    from msa import align_files

    path, _, refined = big
    monkeypatch.setattr(run_split, "SPLIT_FAMILY_BYTES", 1000)
    monkeypatch.setenv(run_dask.TIMELINE_ENV, str(tmp_path / "timeline.json"))
    assert align_files([path], tmp_path / "out", scheduler=client, device="cpu").ok
    assert (tmp_path / "out" / "big.fa").read_bytes() == refined
    tasks = json.loads((tmp_path / "timeline.json").read_text())["tasks"]
    assert sorted(t["kind"] for t in tasks) == ["split plan", "warm-up", "warm-up"]


@needs_dask
def test_a_family_with_consistency_is_aligned_whole_on_one_worker(big, client, tmp_path: Path, monkeypatch) -> None:
    """``--consistency``'s bonuses are the whole tree's: the plan's worker aligns such a family
    itself, and the bytes are the one-process run's."""
    import json

    import msa.run.dask as run_dask
    import msa.run.split as run_split
    from msa import align_files

    path, plain, _ = big
    assert align_files([path], tmp_path / "one", device="cpu", refine="off", consistency="4").ok
    want = (tmp_path / "one" / "big.fa").read_bytes()
    assert want != plain
    monkeypatch.setattr(run_split, "SPLIT_FAMILY_BYTES", 1000)
    monkeypatch.setenv(run_dask.TIMELINE_ENV, str(tmp_path / "timeline.json"))
    assert align_files([path], tmp_path / "out", scheduler=client, device="cpu", refine="off", consistency="4").ok
    assert (tmp_path / "out" / "big.fa").read_bytes() == want
    tasks = json.loads((tmp_path / "timeline.json").read_text())["tasks"]
    assert sorted(t["kind"] for t in tasks) == ["split plan", "warm-up", "warm-up"]


@needs_dask
def test_a_split_family_that_fails_leaves_no_file(big, client, tmp_path: Path, monkeypatch) -> None:
    """A step that keeps failing (after Dask's retries) fails the family with one line naming
    its input; the output is not written, its temporary file is gone."""
    import msa.run.split as run_split
    from msa import align_files

    path, _, _ = big
    monkeypatch.setattr(run_split, "SPLIT_FAMILY_BYTES", 1000)

    def broken() -> None:
        import msa.run.split

        def merge_top(*args):
            raise MemoryError("no room for the top")

        msa.run.split.working_merge_top = msa.run.split.merge_top
        msa.run.split.merge_top = merge_top

    def mended() -> None:  # not client.restart(): on a loaded 2-core machine a worker once took > 120 s
        import msa.run.split

        msa.run.split.merge_top = vars(msa.run.split).pop("working_merge_top")

    client.run(broken)
    try:
        summary = align_files([path], tmp_path / "out", scheduler=client, device="cpu", refine="off")
    finally:
        client.run(mended)
    [failed] = summary.failed
    assert failed.error.startswith(f"{path}: MemoryError: no room for the top"), failed.error
    assert os.listdir(tmp_path / "out") == []


@needs_dask
def test_one_family_to_a_file_on_a_cluster(run_msa, big, client, tmp_path: Path) -> None:
    """``-o FILE --workers 2``: the family on a local cluster, the same bytes; stdout is refused;
    ``--tree FILE`` with ``--scheduler`` is the same tree."""
    path, _, expected = big
    result = run_msa("align", path, "-o", "out.fa", "--device", "cpu", "--workers", "2", cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    assert (tmp_path / "out.fa").read_bytes() == expected
    assert "aligned 400 sequences (protein, detected)" in result.stderr.decode()
    result = run_msa("align", path, "--device", "cpu", "--workers", "2", cwd=tmp_path)
    assert result.returncode == 1
    assert error_lines(result.stderr) == ["msa: error: a cluster's workers write the output: give -o FILE "
                                          "(or -O DIR), not stdout"]
    # A guide tree file named relative to the client's directory (the workers' are elsewhere).
    assert run_msa("tree", path, "-o", "t.nwk", "--device", "cpu", cwd=tmp_path).returncode == 0
    alone = run_msa("align", path, "-o", "alone.fa", "--tree", "t.nwk", "--device", "cpu", cwd=tmp_path)
    assert alone.returncode == 0, alone.stderr.decode()
    result = run_msa("align", path, "-o", "tree.fa", "--tree", "t.nwk", "--device", "cpu", "--scheduler",
                     client.scheduler.address, cwd=tmp_path)
    assert result.returncode == 0, result.stderr.decode()
    assert (tmp_path / "tree.fa").read_bytes() == (tmp_path / "alone.fa").read_bytes()
