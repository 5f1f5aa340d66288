"""Start-up cost guards: what importing msa loads, and one cache entry per Numba kernel."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from numba.core.registry import CPUDispatcher

import msa
from msa.backends.cpu import align as cpu_align
from msa.backends.cpu import kmers as cpu_kmers
from msa.backends.cpu import lcs as cpu_lcs
from msa.backends.cpu import sw as cpu_sw

REPO = Path(__file__).resolve().parents[2]


#: Python lines that run ``msa align`` on the bundled example through the CLI's entry, in-process
#: (into ``out.fa`` of the working directory), and fail on a non-zero exit.
_ALIGN_EXAMPLE = (
    "from msa.__main__ import main\n"
    f"sys.argv = ['msa', 'align', {str(REPO / 'datasets' / 'examples' / 'example.fa')!r}, '-o', 'out.fa', '-q']\n"
    "try:\n"
    "    main()\n"
    "except SystemExit as exc:\n"
    "    assert not exc.code, exc.code\n"
)


def _printed(code: str) -> str:
    """What ``code`` prints, run by a fresh interpreter (imports start from nothing) in the checkout."""
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout


def test_importing_the_cli_loads_neither_numba_nor_rich() -> None:
    # --help, `msa score` and bad-input errors must not wait for Numba (~0.5 s) or rich.
    out = _printed(
        "import sys, msa, msa.cli; "
        "print(sorted(m for m in ('numba', 'rich', 'scipy', 'Bio') if m in sys.modules))"
    )
    assert out.strip() == "[]"


def test_package_names_resolve_on_first_use() -> None:
    assert msa.AlignParams().resolved().matrix == "PFASUM43"
    assert {"align", "build_tree", "read_fasta", "GuideTree"} <= set(dir(msa))
    assert msa.__all__.count("align") == 1


def test_no_python_function_is_compiled_twice() -> None:
    # Numba's cache keys on the Python function and argument types, not on options such
    # as parallel=True: two dispatchers of one function would share (and swap) one entry.
    seen: dict[object, CPUDispatcher] = {}
    for module in (cpu_align, cpu_kmers, cpu_lcs, cpu_sw):
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher):
                assert seen.setdefault(value.py_func, value) is value, f"{value.py_func.__name__} compiled twice"
    assert cpu_align._align_batch.targetoptions.get("parallel")
    assert not cpu_align._align_serial.targetoptions.get("parallel")


def test_auto_cost_model_weighs_size_and_length(tmp_path: Path) -> None:
    """The calibrated model (a GPU host, 16 threads) picks the CPU for the example and for
    10^4 short sequences on 16 threads, the GPU for 10^4 long ones and past a few MB whatever is counted (a
    gzipped file counts GZIP_RATIO times its size), and never the CPU for stdin or a missing file."""
    from msa.run.plan import GZIP_RATIO, MB, auto_device, cpu_first

    example = REPO / "datasets" / "examples" / "example.fa"
    assert cpu_first(str(example), 16)
    short, long_, gz = tmp_path / "short.fa", tmp_path / "long.fa", tmp_path / "g.fa.gz"
    short.write_bytes(b"".join(b">s%d\n%s\n" % (i, b"MKVLA" * 8) for i in range(10_000)))  # 0.5 MB
    long_.write_bytes(b"".join(b">s%d\n%s\n" % (i, b"MKVLA" * 60) for i in range(10_000)))  # 3 MB
    gz.write_bytes(b"x" * (long_.stat().st_size // GZIP_RATIO))
    assert cpu_first(str(short), 16)
    for threads in (2, 16):
        assert not cpu_first(str(long_), threads)
        assert not cpu_first(str(gz), threads)
        assert auto_device(16 * MB, None, threads) == "cuda"
    assert not cpu_first("-") and not cpu_first(str(tmp_path / "missing.fa"))


def test_auto_cost_model_weighs_sequences_and_cores(monkeypatch, tmp_path: Path) -> None:
    """Calibrated coefficients (here made up) decide by bytes, sequences where counted, and the
    CPU threads of the run."""
    from msa.run import plan

    monkeypatch.setattr(plan, "COSTS", {
        "cpu": plan.Cost(start=0.5, per_mb=4.0, per_1k_sequences=1.0, core_exponent=1.0),
        "cuda": plan.Cost(start=1.5, per_mb=0.5),
    })
    mb = plan.MB
    assert plan.auto_device(mb, None, threads=16) == "cpu"  # 0.5 + 4/16 against 2.0
    assert plan.auto_device(mb, None, threads=2) == "cuda"  # 0.5 + 4/2 against 2.0
    assert plan.auto_device(mb, 40_000, threads=16) == "cuda"  # 0.5 + 44/16 against 2.0
    fasta = tmp_path / "f.fa"
    fasta.write_bytes(b">a\nMK\n>b x\nMKV\nL\n>c\n\n")
    assert plan.count_sequences(str(fasta)) == 3
    assert plan.count_sequences("-") is None and plan.count_sequences(str(tmp_path / "none.fa")) is None


def test_a_small_input_starts_the_cpu_under_auto(monkeypatch) -> None:
    """auto + small: the CPU, without trying the GPU; past MST_TREE_MAX['cpu'] sequences the
    two backends' trees could differ, so auto starts as usual."""
    import msa._runtime.startup
    from msa.backends.cpu import CpuBackend
    from msa.params import MST_TREE_MAX

    asked: list[str] = []

    def prepare(device, memory_cap=None):
        asked.append(device)
        return CpuBackend, "msa: using the GPU (cuda backend)" if device == "auto" else None

    monkeypatch.setattr(msa._runtime.startup, "prepare_backend", prepare)
    with msa._runtime.startup.BackendStart("auto", cpu_first=True) as start:
        start.sequences(MST_TREE_MAX["cpu"])
        assert isinstance(start.backend(quiet=True), CpuBackend)
    assert asked == ["cpu"]
    with msa._runtime.startup.BackendStart("auto", cpu_first=True) as start:
        start.sequences(MST_TREE_MAX["cpu"] + 1)
        start.backend(quiet=True)
    assert asked == ["cpu", "cpu", "auto"]
    with msa._runtime.startup.BackendStart("cuda", cpu_first=True) as start:  # an explicit device stands
        start.backend(quiet=True)
    assert asked[-1] == "cuda"


def test_a_small_input_aligns_as_on_the_cpu(tmp_path: Path) -> None:
    """The CLI under auto takes the CPU for the example and writes the --device cpu bytes; it says
    so, pointing at --device cuda, only where CuPy is installed."""
    example = REPO / "datasets" / "examples" / "example.fa"
    runs = [
        subprocess.run([sys.executable, "-m", "msa", "align", str(example), *extra], cwd=tmp_path,
                       capture_output=True, check=True)
        for extra in ([], ["--device", "cpu", "-q"])
    ]
    assert runs[0].stdout == runs[1].stdout
    gpu = importlib.util.find_spec("cupy") is not None
    assert (b"using the CPU for a small input (--device cuda takes the GPU)" in runs[0].stderr) == gpu


def test_the_cli_start_skips_numbas_blas_coverage_and_yaml_probes(tmp_path: Path) -> None:
    """A CLI start's first compiled function, loaded from a cache or compiled, does not import
    SciPy's linalg (Numba's BLAS probe; msa uses no BLAS), and Numba's import imports neither
    SciPy (its version check), ``coverage`` nor ``yaml`` (stand-ins here, which say when they are
    imported); all stay importable afterwards. With a ``.numba_config.yaml`` in the working
    directory Numba imports ``yaml`` to read it."""
    stand_ins = tmp_path / "modules"
    stand_ins.mkdir()
    for name in ("coverage", "yaml"):
        (stand_ins / f"{name}.py").write_text(f"import sys\nsys.stderr.write('{name} imported\\n')\n"
                                              "def safe_load(stream):\n    return None\n")
    code = ("import sys\n"
            "from msa._runtime.startup import BLAS_PROBE, COVERAGE_PROBE, BackendStart\n"
            "with BackendStart('cpu') as start:\n"
            "    start.backend(quiet=True)\n"
            "    start._numba.join()\n"
            "from numba.misc import coverage_support\n"
            "print('scipy' in sys.modules, sys.modules.get(BLAS_PROBE, 0) is None,\n"
            "      coverage_support.coverage_available, sys.modules.get(COVERAGE_PROBE, 0) is None)\n"
            "sys.stderr.write('started\\n')\n"
            "import coverage, scipy.linalg, yaml\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(stand_ins)])}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True,
                          env=env)
    assert done.stdout.split() == ["False", "False", "False", "False"]
    assert done.stderr == "started\ncoverage imported\nyaml imported\n"  # only by the last line
    (tmp_path / ".numba_config.yaml").write_text("")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True,
                          env=env)
    assert done.stderr.startswith("yaml imported\n")


def test_cached_functions_load_without_numbas_registries() -> None:
    """A function found in a cache is loaded without Numba's typing and lowering registries
    (msa.jit: 0.3-0.5 s of a run's start), and runs; a second process finds what the first
    cached, whether it loaded or compiled it."""
    code = (
        "import sys, numpy as np\n"
        "from msa.seqops import take_ranges\n"
        "print(take_ranges(np.arange(6), np.array([1, 4]), np.array([2, 1])).tolist(), "
        "'numba.np.arraymath' in sys.modules)\n"
    )
    _printed(code)
    assert _printed(code).split() == ["[1,", "2,", "4]", "False"]


def test_add_and_merge_options_leave_numba_to_the_backend_start() -> None:
    """msa add/merge read their alignments and make their profiles while the backend starts:
    checking their options and the host side must not import the pipeline (and Numba) on the
    main thread first."""
    out = _printed(
        "import sys\n"
        "from msa.cli.profiles import _scoring_params\n"
        "from msa.alignment import AlignedRows\n"
        "from msa.io.fasta import parse_aligned_fasta\n"
        "from msa.merge import prepare_addition, prepare_merge\n"
        "from msa.seqdb import SeqDB\n"
        "params = _scoring_params('auto', None, None, None, None, 0, 'cpu', True)\n"
        "names, heads, text, offsets = parse_aligned_fasta(b'>a\\nMK-VL\\n>b\\nMKWV-\\n', 'x')\n"
        "aligned = AlignedRows.from_text(names, heads, text, offsets, None, 5)\n"
        "prepare_addition(aligned, SeqDB.from_pairs([('n', 'MKVL')]), params)\n"
        "prepare_merge(aligned, aligned, params)\n"
        "print('numba' in sys.modules, 'msa.pipeline' in sys.modules)\n"
    )
    assert out.split() == ["False", "False"]


class _FakeDriver:
    """libcuda's three start calls, recorded; ``failing`` names one that returns an error."""

    def __init__(self, failing: str | None = None) -> None:
        self.calls: list[tuple] = []
        self.failing = failing

    def __getattr__(self, name: str):
        def call(*args):
            self.calls.append((name, *[getattr(a, "_obj", a) for a in args]))
            return 100 if name == self.failing else 0  # CUDA_ERROR_NO_DEVICE

        return call


def test_the_primary_context_is_made_through_the_driver(monkeypatch) -> None:
    """start_cuda's context thread: cuInit, the device's handle, its primary context retained
    (the one CuPy's runtime then uses); a failing step stops there, a missing driver is quiet."""
    import ctypes

    import msa._runtime.cuda_start as cuda_start

    driver = _FakeDriver()
    monkeypatch.setattr(ctypes, "CDLL", lambda name: driver)
    cuda_start._retain_primary_context(3)
    assert [c[0] for c in driver.calls] == ["cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain"]
    assert driver.calls[1][2] == 3
    for failing, made in (("cuInit", 1), ("cuDeviceGet", 2)):
        driver = _FakeDriver(failing)
        monkeypatch.setattr(ctypes, "CDLL", lambda name: driver)
        cuda_start._retain_primary_context(0)
        assert len(driver.calls) == made

    def missing(name):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(ctypes, "CDLL", missing)
    cuda_start._retain_primary_context(0)  # nothing raised
    cuda_start.start_cuda(0)  # nor here, whatever this machine has


def test_the_cuda_backend_imports_no_numba() -> None:
    """msa add/merge on the GPU never import Numba (BackendStart's numba_on_gpu=False): the
    backend's modules, imported with a stand-in CuPy here, must not import Numba or the
    Numba-compiled modules they call into."""
    out = _printed(
        "import sys\n"
        "from unittest import mock\n"
        "sys.modules['cupy'] = mock.MagicMock(name='cupy')\n"
        "import msa.backends.cuda\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'numba' or m in ('msa.jit', 'msa.pipeline')))\n"
    )
    assert out.strip() == "[]"


def test_no_numba_for_a_gpu_add_or_merge(monkeypatch) -> None:
    """With numba_on_gpu=False a CUDA backend is made and no Numba thread ever runs (msa add and
    merge write their records on the GPU too); where auto makes the CPU's backend instead,
    Numba's thread starts after it; on the CPU, Numba comes first as usual."""
    import threading

    import msa._runtime.startup
    from msa.backends.cpu import CpuBackend

    order: list[str] = []
    lock = threading.Lock()

    class Gpu(CpuBackend):
        name = "cuda"

    def prepare(device, memory_cap=None):
        def make():
            with lock:
                order.append(f"backend {device}")
            return Gpu() if device == "cuda" else CpuBackend()

        return make, None

    def load_numba(block, imported, stop):
        with lock:
            order.append("numba")
        imported.set()
        block.release()

    monkeypatch.setattr(msa._runtime.startup, "prepare_backend", prepare)
    monkeypatch.setattr(msa._runtime.startup, "start_cuda", lambda: None)
    monkeypatch.setattr(msa._runtime.startup, "_load_numba", load_numba)
    for device, want in (("cuda", ["backend cuda"]), ("auto", ["backend auto", "numba"]),
                         ("cpu", ["numba", "backend cpu"])):
        order.clear()
        with msa._runtime.startup.BackendStart(device, numba_on_gpu=False) as start:
            start.backend(quiet=True)
        assert order == want, device


def test_idle_threads_sleep_from_the_first_parallel_kernel() -> None:
    """GNU libgomp reads OMP_WAIT_POLICY once, when the first parallel kernel starts its pool, and
    that is a family's preparation (de-duplication's hash), before any stage sets threads: the
    policy must be set by then, or every idle thread spins (the example 4x slower on busy cores)."""
    example = REPO / "datasets" / "examples" / "example.fa"
    code = (
        "import os\n"
        "from msa.io import read_fasta\n"
        "from msa.params import AlignParams\n"
        "from msa.pipeline import prepare_family\n"
        f"prepare_family(read_fasta({str(example)!r}), AlignParams())\n"
        "print(os.environ.get('OMP_WAIT_POLICY'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["PASSIVE"]


@pytest.mark.parametrize("user", [None, "3"])
def test_numpys_blas_loads_with_one_thread_unless_the_user_says(tmp_path: Path, user: str | None) -> None:
    """msa calls no BLAS, and OpenBLAS's thread per core cost a 16-core host ~1.6 s of CPU a run:
    the command sets one thread before NumPy loads, where the user set no number."""
    example = REPO / "datasets" / "examples" / "example.fa"
    code = (
        "import os, sys\n"
        f"sys.argv = ['msa', 'align', {str(example)!r}, '-o', {str(tmp_path / 'out.fa')!r}, '--quiet']\n"
        "from msa.__main__ import main\n"
        "assert 'numpy' not in sys.modules\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code\n"
        "print(os.environ.get('OPENBLAS_NUM_THREADS'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if user is not None:
        env["OPENBLAS_NUM_THREADS"] = user
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split() == [user or "1"]
    assert (tmp_path / "out.fa").stat().st_size > 0


def _modules_after(argv: list[str]) -> tuple[str, list[str]]:
    """What ``msa ARGV`` prints, and which heavy modules it imported, in a fresh interpreter."""
    code = (
        "import sys\n"
        f"sys.argv = ['msa', *{argv!r}]\n"
        "from msa.__main__ import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write(repr(sorted(m for m in ('numpy', 'numba', 'cupy', 'rich', 'typer') if m in sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    return done.stdout, eval(done.stderr.strip().splitlines()[-1])


def test_version_is_answered_before_the_cli_imports() -> None:
    out, modules = _modules_after(["--version"])
    assert out == f"msa {msa.__version__}\n"
    assert modules == []
    out, modules = _modules_after(["--version", "align"])  # the CLI's option prints the same line
    assert out == f"msa {msa.__version__}\n"


def test_help_and_argument_errors_import_no_numpy() -> None:
    for argv in (["--help"], ["align", "--help"], ["add", "-h"], ["merge", "--help"], ["tree", "--help"],
                 ["score", "--help"], ["align", "--no-such-option"], ["align", "x.fa", "--device", "tpu"]):
        _, modules = _modules_after(argv)
        assert not {"numpy", "numba", "cupy"} & set(modules), (argv, modules)


def test_the_cli_types_arrays_without_importing_numpy_ma(tmp_path: Path) -> None:
    """A CLI run types its arrays without importing numpy.ma (Numba's typeof asks whether each
    first array is a MaskedArray); the types are Numba's own, and once numpy.ma is imported a
    masked array is refused as Numba refuses it."""
    code = (
        "import sys\n"
        + _ALIGN_EXAMPLE +
        "print('numpy.ma' in sys.modules)\n"
        "import numpy as np\n"
        "from numba.core.typing import typeof\n"
        "from numba.core.typing.typeof import Purpose, _typeof_ndarray\n"
        "patched = typeof.typeof_impl.dispatch(np.ndarray)\n"
        "base = np.arange(24, dtype=np.int64).reshape(4, 6)\n"
        "arrays = [base, base.T, base[:, ::2], base[0], np.zeros(3, np.uint8), np.zeros((2, 2), np.float32, order='F'),\n"
        "          np.broadcast_to(np.arange(4), (3, 4)), np.frombuffer(b'abc', dtype=np.uint8), np.zeros((), bool)]\n"
        "types = [patched(a, Purpose.argument) for a in arrays]\n"
        "print(patched is not _typeof_ndarray, types == [_typeof_ndarray(a, Purpose.argument) for a in arrays])\n"
        "from msa.seqops import take_ranges\n"
        "try:\n"
        "    take_ranges(np.ma.masked_array(np.arange(6)), np.array([1]), np.array([2]))\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.split() == ["False", "True", "True", "NumbaTypeError"]


def test_a_cli_run_skips_the_extension_search_and_loads_importlib_metadata_on_first_use(tmp_path: Path) -> None:
    """A CLI run makes its first compiled call on the main thread with Numba's extension search
    marked done (whichever thread gets there first), so ``importlib.metadata``, which Numba
    imports for that search, is never loaded; it is the standard library's lazy module, and its
    first use loads the real one."""
    code = (
        "import sys\n"
        + _ALIGN_EXAMPLE +
        "from numba.core import entrypoints\n"
        "print(entrypoints._already_initialized, 'email.message' in sys.modules)\n"
        "import importlib.metadata\n"
        "from importlib import metadata\n"
        "print(metadata is sys.modules['importlib.metadata'], metadata.version('numpy') == __import__('numpy').__version__)\n"
        "print('email.message' in sys.modules, type(metadata).__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.split() == ["True", "False", "True", "True", "True", "module"]


def test_the_collector_is_paused_while_a_command_starts(tmp_path: Path) -> None:
    """A command's process runs without garbage collection from its entry until the backend is
    in hand; then the start's objects are frozen and the collector is on again, with msa's
    thresholds. The same calls in a process that is not a command's change nothing."""
    code = (
        "import gc, sys\n"
        "from msa._runtime import collector\n"
        "collector.pause(); collector.resume()\n"
        "print(gc.isenabled(), gc.get_freeze_count() == 0, gc.get_threshold() != collector.THRESHOLDS)\n"
        "states = []\n"
        "real = collector.resume\n"
        "def resume():\n"
        "    states.append(gc.isenabled())\n"
        "    real()\n"
        "collector.resume = resume\n"
        + _ALIGN_EXAMPLE +
        "print(states[:2] == [False, False], gc.isenabled(), gc.get_freeze_count() > 10_000,\n"
        "      gc.get_threshold() == collector.THRESHOLDS)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.split() == ["True", "True", "True", "True", "True", "True", "True"]


def test_the_script_ends_without_teardown_and_loses_no_output(tmp_path: Path) -> None:
    """``python -m msa`` ends by os._exit once the command is done (no atexit handler runs),
    with everything it wrote to stdout delivered and the command's exit status; a usage error
    still exits 2."""
    example = str(REPO / "datasets" / "examples" / "example.fa")
    probe = ("import atexit, runpy, sys\n"
             "atexit.register(lambda: sys.stderr.write('teardown\\n'))\n"
             "sys.argv = ['msa', *sys.argv[1:]]\n"
             "runpy.run_module('msa', run_name='__main__')\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    piped = subprocess.run([sys.executable, "-c", probe, "align", example, "-q"], cwd=tmp_path, capture_output=True,
                           env=env)
    assert piped.returncode == 0 and b"teardown" not in piped.stderr, piped.stderr
    subprocess.run([sys.executable, "-m", "msa", "align", example, "-q", "-o", "out.fa"], cwd=tmp_path, check=True,
                   env=env)
    assert piped.stdout == (tmp_path / "out.fa").read_bytes()
    usage = subprocess.run([sys.executable, "-c", probe, "align", example, "--device", "tpu"], cwd=tmp_path,
                           capture_output=True, text=True, env=env)
    assert usage.returncode == 2 and "teardown" not in usage.stderr


def _package(root: Path, name: str, compiled: bool) -> None:
    """A one-module package ``name`` under ``root``, with its bytecode beside it or without."""
    import py_compile

    (root / name).mkdir(parents=True)
    source = root / name / "__init__.py"
    source.write_text("VALUE = 1\n")
    if compiled:
        py_compile.compile(str(source), cfile=importlib.util.cache_from_source(str(source)))


def test_bytecode_goes_to_msas_cache_only_where_packages_have_none(monkeypatch, tmp_path: Path) -> None:
    """An install without bytecode (uv's default, PYTHONDONTWRITEBYTECODE) would compile NumPy and
    Numba in every run: the CLI then keeps their bytecode, and its children's (Dask's workers),
    in msa's user cache; installs with it, and a prefix the user chose, are left alone."""
    from msa._runtime import bytecode

    _package(tmp_path / "site", "bare_pkg", compiled=False)
    _package(tmp_path / "site", "built_pkg", compiled=True)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    monkeypatch.setattr(bytecode, "PROBES", ("built_pkg", "no_such_pkg"))
    assert bytecode.keep_bytecode() is None and sys.pycache_prefix is None
    monkeypatch.setattr(bytecode, "PROBES", ("built_pkg", "bare_pkg"))
    prefix = str(tmp_path / "cache" / "msa" / "pycache")
    assert bytecode.keep_bytecode() == prefix
    assert sys.pycache_prefix == prefix and not sys.dont_write_bytecode
    assert os.environ["PYTHONPYCACHEPREFIX"] == prefix and "PYTHONDONTWRITEBYTECODE" not in os.environ  # children
    monkeypatch.setattr(sys, "pycache_prefix", "/chosen")
    assert bytecode.keep_bytecode() is None and sys.pycache_prefix == "/chosen"


def test_a_run_without_bytecode_writes_it_to_msas_cache_and_aligns_the_same(tmp_path: Path) -> None:
    """The CLI's run, its probe package installed without bytecode and PYTHONDONTWRITEBYTECODE set:
    the modules it imports are compiled into msa's cache (not beside their sources), the
    alignment is the usual one, and a second run reads them from there."""
    _package(tmp_path / "site", "bare_pkg", compiled=False)
    example = str(REPO / "datasets" / "examples" / "example.fa")
    code = ("import sys\n"
            "from msa._runtime import bytecode\n"
            "bytecode.PROBES = ('bare_pkg',)\n"
            f"sys.argv = ['msa', 'align', {example!r}, '-o', sys.argv[1], '-q']\n"
            "from msa.__main__ import main\n"
            "main()\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path / "site")]),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPYCACHEPREFIX", None)
    subprocess.run([sys.executable, "-c", code, "one.fa"], cwd=tmp_path, env=env, check=True)
    cached = {path: path.stat().st_mtime_ns for path in (tmp_path / "cache" / "msa" / "pycache").rglob("*.pyc")}
    assert any("numpy" in path.parts for path in cached) and any("msa" in path.parts for path in cached)
    subprocess.run([sys.executable, "-c", code, "two.fa"], cwd=tmp_path, env=env, check=True)
    assert {path: path.stat().st_mtime_ns for path in cached} == cached  # read, not written again
    assert not (tmp_path / "site" / "bare_pkg" / "__pycache__").exists()
    subprocess.run([sys.executable, "-m", "msa", "align", example, "-o", "plain.fa", "-q"], cwd=tmp_path,
                   env={**os.environ, "PYTHONPATH": str(REPO)}, check=True)
    assert (tmp_path / "one.fa").read_bytes() == (tmp_path / "two.fa").read_bytes() == (tmp_path / "plain.fa").read_bytes()


def test_a_module_half_made_by_a_failed_start_is_one_line(monkeypatch, capsys) -> None:
    """Where the start's thread failed to import Numba (no memory to map it), the main thread
    meets a half-made module (a missing name): one line naming the first failure; without such
    a failure a missing name is a bug and keeps its traceback."""
    import types

    import typer

    from msa._runtime import startup
    from msa.cli.common import _errors

    half_made = types.ModuleType("numba")
    monkeypatch.setattr(startup, "import_failure", MemoryError())
    with pytest.raises(typer.Exit), _errors():
        half_made.njit  # noqa: B018
    assert capsys.readouterr().err == "msa: error: cannot load numba: out of memory\n"
    monkeypatch.setattr(startup, "import_failure", None)
    with pytest.raises(AttributeError), _errors():
        half_made.njit  # noqa: B018
