"""msa._runtime.forked: a call made in a forked child gives what the call gives here, errors and notes included."""
from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from msa._runtime import forked
from msa._runtime.forked import ForkedCall, forkable
from msa.io import InputError
from msa.progress import NoteRecorder

@pytest.fixture
def fork_ok(monkeypatch):
    """Forks even where earlier tests of the session left idle threads (Dask's workers): a CLI
    run forks before it starts any, which the CLI tests check; here the call must fork."""
    if not sys.platform.startswith("linux"):
        pytest.skip("forks only on Linux")
    monkeypatch.setattr(forked, "forkable", lambda: True)


needs_fork = pytest.mark.usefixtures("fork_ok")


def _arrays(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "codes": rng.integers(0, 25, 100_003, dtype=np.uint8),
        "columns": rng.integers(0, 1 << 40, 7_777, dtype=np.int64),
        "table": rng.random((61, 27), dtype=np.float32),
        "empty": np.zeros(0, dtype=np.int64),
        "names": [f"s{i} é" for i in range(1_000)],
        "view": np.arange(10)[::3],  # not contiguous: pickled in band
    }


def _same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], np.ndarray):
            assert a[key].dtype == b[key].dtype and np.array_equal(a[key], b[key]), key
        else:
            assert a[key] == b[key], key


def _noting(seed: int) -> dict:
    from msa.progress import current

    current().note(f"made {seed}")
    return _arrays(seed)


@needs_fork
def test_a_forked_call_returns_the_calls_value_through_shared_memory() -> None:
    with ForkedCall(_arrays, 5, reserve=1 << 24) as call:
        assert call.forked
        got = call.result()
    _same(got, _arrays(5))
    assert not got["codes"].flags.owndata  # a view of the shared mapping, not a copy
    got["codes"][:] = 0  # and writable, as the call's own arrays are


@needs_fork
def test_a_result_too_big_for_its_reserve_comes_through_the_pipe() -> None:
    with ForkedCall(_arrays, 6, reserve=1 << 12) as call:
        got = call.result()
    _same(got, _arrays(6))


@needs_fork
def test_errors_and_notes_come_back_from_the_child(monkeypatch) -> None:
    recorder = NoteRecorder()
    with recorder.running():
        with ForkedCall(_noting, 3, reserve=1 << 20) as call:
            _same(call.result(), _arrays(3))
        assert recorder.notes == ["made 3"]

        def bad(path: str) -> None:
            raise InputError(f"{path}: not an alignment")

        with ForkedCall(bad, "x.fa", reserve=1 << 20) as call:
            with pytest.raises(InputError, match="^x.fa: not an alignment$"):
                call.result()

        class Odd(Exception):
            def __init__(self, a: int, b: int) -> None:  # cannot be rebuilt from its args
                super().__init__(f"{a}+{b}")

        def odd() -> None:
            raise Odd(1, 2)

        with ForkedCall(odd, reserve=1 << 20) as call:
            with pytest.raises(RuntimeError, match="Odd: 1\\+2"):
                call.result()


@needs_fork
def test_a_child_that_dies_is_replaced_by_the_call_made_here() -> None:
    parent = os.getpid()

    def fragile(seed: int) -> dict:
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return _arrays(seed)

    with ForkedCall(fragile, 7, reserve=1 << 24) as call:
        assert call.forked
        _same(call.result(), _arrays(7))


@needs_fork
def test_leaving_the_block_stops_and_reaps_the_child() -> None:
    def slow() -> None:
        import time

        time.sleep(60)

    with pytest.raises(ZeroDivisionError):
        with ForkedCall(slow, reserve=1 << 20) as call:
            pid = call._pid
            1 / 0
    with pytest.raises(ChildProcessError):  # reaped: no zombie left
        os.waitpid(pid, os.WNOHANG)


def test_with_another_thread_running_the_call_is_made_here() -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not forkable()
        with ForkedCall(_arrays, 8, reserve=1 << 24) as call:
            assert not call.forked
            _same(call.result(), _arrays(8))
    finally:
        stop.set()
        thread.join()


@needs_fork
def test_add_and_merge_read_alike_in_a_child_and_here(tmp_path: Path, monkeypatch) -> None:
    from msa.run.profiles import _read_addition, _read_merge
    from msa.params import AlignParams

    (tmp_path / "a.fa").write_bytes(b">a1 x\nMKV-LAGIVG\n>a2\nMK-WLAGIVG\n>a3\n-KVWLAGIV-\n")
    (tmp_path / "b.a3m").write_bytes(b"#A3M\n>b1\nMKVLAGIV\n>b2\nMKwVLAGIV\n")
    (tmp_path / "new.fa").write_bytes(b">n1\nMKVWWLAG\n>n2\nAGIVG\n")
    params = AlignParams()
    calls = [
        (_read_addition, str(tmp_path / "a.fa"), str(tmp_path / "new.fa"), "auto", params),
        (_read_merge, str(tmp_path / "a.fa"), str(tmp_path / "b.a3m"), "auto", params),
    ]
    for fn, *args in calls:
        with ForkedCall(fn, *args, reserve=1 << 24) as call:
            assert call.forked
            child = call.result()
        here = fn(*args)
        assert _fields(child) == _fields(here)
    monkeypatch.setattr(forked, "forkable", lambda: False)
    with ForkedCall(calls[0][0], *calls[0][1:], reserve=1 << 24) as call:
        assert not call.forked and _fields(call.result()) == _fields(_read_addition(*calls[0][1:]))


def _fields(obj: object) -> object:
    """Everything an object holds, arrays as (dtype, list): comparable with ==."""
    if isinstance(obj, np.ndarray):
        return (str(obj.dtype), obj.shape, obj.tolist())
    if isinstance(obj, (list, tuple)):
        return [_fields(x) for x in obj]
    if hasattr(obj, "__dict__") or hasattr(obj, "__dataclass_fields__"):
        names = getattr(obj, "__dataclass_fields__", None) or vars(obj)
        return {k: _fields(getattr(obj, k)) for k in names}
    return obj
