"""The backend's start on background threads, begun before the input is read (the CLI's runs).

Above :mod:`msa.backends` and :mod:`msa.pipeline`: it imports the pipeline
modules early so that they load while the input is read; nothing below imports it.
Which backend ``--device auto`` starts is the run's plan (:func:`msa.run.plan.cpu_first`).
"""
from __future__ import annotations

import os
import sys
import threading

from msa._runtime import collector
from msa._runtime.cuda_start import start_cuda
from msa.backends import Backend, prepare_backend
from msa.params import MST_TREE_MAX

class BackendStart:
    """``get_backend`` on background threads, begun before the input is read.

    Importing CuPy and Numba, creating the CUDA context and loading the kernels
    need nothing from the input. Begun first, they run while the main thread
    reads and de-duplicates it, NumPy work that mostly releases the GIL. Two
    threads: one imports the pipeline (Numba) and loads its first compiled
    function; the other imports CuPy while the CUDA context is made through the
    driver on a third (msa._runtime.cuda_start), then, once the pipeline is
    imported, makes the backend, so the two do not import the same modules at once
    (``numba_on_gpu=False``: a GPU run needs no Numba, and no Numba thread starts unless
    the backend made is the CPU's).
    ``backend()`` waits for the backend only and raises what its start raised
    (no GPU for ``--device cuda``) in the caller's thread; leaving the ``with``
    block waits for both threads, so no error path exits the process while a
    CUDA context is half made.
    """

    def __init__(
        self, device: str, memory_cap: int | None = None, cpu_first: bool = False, numba_on_gpu: bool = True
    ) -> None:
        """``cpu_first``: the cost model picks the CPU for the input (:func:`msa.run.plan.cpu_first`); under
        ``auto`` the CPU backend starts, and :meth:`sequences` starts the GPU instead if the input turns out to hold
        more sequences than the two backends align alike. ``numba_on_gpu=False``: a run on the
        GPU needs no Numba (``add``, ``merge``: the GPU aligns and writes the records), so the
        CUDA backend is made as soon as CuPy is imported and Numba is never imported, since
        its import (~0.2-0.3 s of Python) would hold the GIL the reading and the aligning need;
        on the CPU (and where ``auto`` finds no GPU) Numba is imported as always."""
        self._deferred = device == "auto" and cpu_first
        self._device = "cpu" if self._deferred else device
        self._memory_cap = memory_cap
        self._gpu_numba = numba_on_gpu
        collector.pause()  # until the main thread has the backend (msa._runtime.collector)
        self._start()

    def _start(self) -> None:
        self._result: tuple[Backend, str | None] | None = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._probe_block = _ProbeBlock()
        self._imported = threading.Event()
        self._stop = threading.Event()
        self._numba = threading.Thread(
            target=_load_numba, args=(self._probe_block, self._imported, self._stop), name="msa-numba-start",
            daemon=True,
        )
        self._thread = threading.Thread(target=self._run, name="msa-backend-start", daemon=True)
        self._numba_first = self._gpu_numba or self._device == "cpu"
        try:
            if self._numba_first:
                self._numba.start()
            self._thread.start()
        except RuntimeError as exc:  # "can't start new thread": no memory left for its stack
            raise MemoryError(f"cannot start the backend's threads ({exc})") from None

    def sequences(self, n: int) -> None:
        """The input holds ``n`` sequences: a CPU start under auto stands only if
        the CPU aligns it as the GPU would (its exact trees reach as far), else auto starts."""
        if self._deferred and n > MST_TREE_MAX["cpu"]:
            self._deferred = False
            self._join()
            self._device = "auto"
            self._start()

    def __enter__(self) -> BackendStart:
        return self

    def __exit__(self, *exc: object) -> None:
        self._join()

    def _join(self) -> None:
        collector.resume()
        self._thread.join()
        self._stop.set()  # the Numba thread's preloading ends at its next function
        if self._numba.ident is not None:  # started
            self._numba.join()
        self._probe_block.release()

    def _run(self) -> None:
        try:
            if self._device != "cpu":
                start_cuda()
            if self._numba_first:
                self._imported.wait()
            make, note = prepare_backend(self._device, self._memory_cap)
            self._result = make(), note
        except BaseException as exc:  # re-raised by backend(), in the main thread
            self._error = exc
        finally:
            made = self._result[0].name if self._result is not None else None
            if not self._numba_first and made == "cpu":  # auto found no GPU: the CPU needs Numba
                self._numba.start()
            self._ready.set()

    def backend(self, *, quiet: bool = False) -> Backend:
        """The started backend (waits for it); prints ``auto``'s choice unless quiet."""
        self._ready.wait()
        if self._result is None:
            assert self._error is not None
            raise self._error
        backend, note = self._result
        collector.resume()
        if self._deferred:
            note = "msa: using the CPU for a small input (--device cuda takes the GPU)"
        if note is not None and not quiet:
            print(note, file=sys.stderr)
        return backend


#: What the background import of the pipeline raised, if it failed (no memory to map Numba,
#: ``NUMBA_NUM_THREADS=0``): the main thread's own import of a module that the failure left
#: half made then fails with a bare "cannot import name", and the CLI reports this instead.
import_failure: BaseException | None = None


def _load_numba(block: _ProbeBlock, imported: threading.Event, stop: threading.Event) -> None:
    """The pipeline's modules (Numba: 0.2-0.3 s), then the first compiled function (Numba's
    runtime and threads), then, until ``stop`` is set, the compiled functions of the stages
    after the guide tree's distances, from the shipped cache (msa.jit.preload: the
    main thread meanwhile de-duplicates the input and computes the distances); ``imported``
    is set once the imports are done. Errors end the thread quietly: the backend's start
    imports the same modules and the main thread calls the same functions, and each reports
    what failed there."""
    try:
        try:
            import_pipeline()
            from msa.backends.cpu import first_compiled_call  # local: (c) Numba, on the start thread (docs/start-up.md, step 6)
        except BaseException as exc:
            global import_failure
            import_failure = exc
            raise
        finally:
            imported.set()
        skip_numba_extensions()
        first_compiled_call()
        block.release()  # Numba's own imports are done: a stage may import SciPy from here on
        from msa.jit import preload  # local: (c) Numba, on the start thread (docs/start-up.md, step 6)
        from msa.backends.cpu import stage_functions  # local: (c) Numba, on the start thread (docs/start-up.md, step 6)

        preload(stage_functions(), stop)
    except BaseException:
        pass
    finally:
        block.release()


def import_pipeline() -> None:
    """Numba, then the pipeline's modules (the tree, progressive and CPU backend modules), with
    arrays typed without numpy.ma from the start (:func:`_typeof_without_numpy_ma`)."""
    import numba  # noqa: F401

    _typeof_without_numpy_ma()
    import msa.pipeline  # local: (c) Numba, on the start thread (docs/start-up.md, step 6)


def skip_numba_extensions() -> None:
    """Numba's first compiled call looks for extension packages by reading the entry points of
    every installed distribution (0.2-0.5 s in the device machines' 200-package environment, on
    the thread the main one waits for; on the 2-core dev machine ~10 ms with importlib.metadata's
    import). msa's compiled functions use no extension, so in msa's own processes (the CLI)
    the search is marked done before each thread's first compiled call (whichever thread comes
    first would run it); a library user's process is left as it is, and so is every process
    where msa's jit hooks are off (MSA_JIT_HOOKS=0)."""
    from numba.core import entrypoints

    from msa.jit import hooks_off  # local: (c) Numba, on the start thread (docs/start-up.md, step 6)

    if hooks_off() is None and getattr(entrypoints, "_already_initialized", None) is False:
        entrypoints._already_initialized = True


def _typeof_without_numpy_ma() -> None:
    """Numba types the first array of each dtype, dimension and layout by its Python typeof,
    whose first line asks whether the array is a ``numpy.ma.MaskedArray``, and NumPy imports
    numpy.ma on that first reading of ``np.ma`` (7 ms on the 2-core dev machine, in every run).
    No array is a MaskedArray before numpy.ma is imported, so in msa's own processes (the CLI)
    arrays are typed without the question until it is; the answer is Numba's own otherwise, and
    in every process where msa's jit hooks are off (MSA_JIT_HOOKS=0: untested Numba)."""
    import numpy as np
    from numba.core import errors, types
    from numba.core.typing import typeof
    from numba.np import numpy_support

    from msa.jit import hooks_off  # local: (c) Numba, on the start thread (docs/start-up.md, step 6)

    numbas = typeof.typeof_impl.dispatch(np.ndarray)
    if hooks_off() is not None or getattr(numbas, "__name__", None) != "_typeof_ndarray":
        return

    def typeof_ndarray(val, c):
        if "numpy.ma" in sys.modules:
            return numbas(val, c)
        try:  # the rest of Numba's _typeof_ndarray
            dtype = numpy_support.from_dtype(val.dtype)
        except errors.NumbaNotImplementedError:
            raise errors.NumbaValueError(f"Unsupported array dtype: {val.dtype}") from None
        return types.Array(dtype, val.ndim, numpy_support.map_layout(val), readonly=not val.flags.writeable)

    typeof.typeof_impl.register(np.ndarray)(typeof_ndarray)


#: The module Numba's array-math registry imports to see whether SciPy's BLAS is there.
BLAS_PROBE = "scipy.linalg.cython_blas"
#: What Numba's import tries, to report compiled lines to a running coverage measurement.
COVERAGE_PROBE = "coverage"
#: What Numba's import imports, where installed, only to check its version (``import numba``'s
#: first lines); blocking it blocks BLAS_PROBE too.
SCIPY_PROBE = "scipy"
#: What Numba's config imports, where installed, to read NUMBA_CONFIG_FILE.
YAML_PROBE = "yaml"
#: Numba's configuration file, read from the working directory when PyYAML is there.
NUMBA_CONFIG_FILE = ".numba_config.yaml"


class _ProbeBlock:
    """Until Numba is imported and its registries are loaded, four of its optional imports find
    nothing, on a thread that competes with the main one for the GIL:

    * the BLAS probe (SciPy's linalg: 0.58 s of the 1.3 s the registries took on the H100
      machine's host). No compiled function of msa uses BLAS (``np.dot``, ``np.linalg``).
    * ``coverage``, which ``import numba`` imports wherever it is installed (0.04 s on the
      device machines' image) to tell a running measurement which lines it compiled. Not
      blocked when coverage is already imported (a run under ``coverage run``).
    * ``scipy`` itself, which ``import numba`` imports to check that its version is at least
      1.0 (7 ms on the 2-core dev machine); msa's runs import no SciPy.
    * ``yaml``, which Numba's config imports wherever PyYAML is installed (8 ms on the 2-core
      dev machine) to read a ``.numba_config.yaml`` in the working directory; not blocked
      where that file is there.

    Set when the start begins, so the probes are skipped whichever thread gets there first;
    this runs only in msa's own processes (the CLI), never when msa is imported as a library.
    Numba's import also imports ``importlib.metadata`` for the extension search that msa's
    processes skip (:func:`skip_numba_extensions`): from here on that module loads on its first
    use (:func:`_metadata_on_first_use`)."""

    def __init__(self) -> None:
        _metadata_on_first_use()
        probes = (SCIPY_PROBE, BLAS_PROBE, COVERAGE_PROBE)
        if not os.path.exists(NUMBA_CONFIG_FILE):
            probes += (YAML_PROBE,)
        self._blocked = [m for m in probes if m not in sys.modules]
        for module in self._blocked:
            sys.modules[module] = None  # type: ignore[assignment]  (importing it raises ImportError)

    def release(self) -> None:
        """Let the modules be imported again (idempotent)."""
        for module in self._blocked:
            if sys.modules.get(module, 0) is None:
                del sys.modules[module]
        self._blocked = []


#: What ``numba.core.entrypoints`` imports at Numba's import, for the extension search only.
METADATA = "importlib.metadata"


def _metadata_on_first_use() -> None:
    """``importlib.metadata`` as a module that loads on its first use (the standard library's
    ``importlib.util.LazyLoader``), unless something imported it already. Numba's import takes
    it (with email, csv, zipfile and socket: ~8 ms on the 2-core dev machine) for the extension
    search alone, which msa's processes skip; any other user reads it as the real module, loaded
    then. Its only early user, that search, runs in one thread at most (it marks itself done
    first), so the loader's first-use race on Python before 3.12 has nothing to race."""
    if METADATA in sys.modules:
        return
    import importlib
    import importlib.util

    spec = importlib.util.find_spec(METADATA)
    if spec is None or spec.loader is None:
        return
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[METADATA] = module
    importlib.metadata = module  # type: ignore[attr-defined]  (``from importlib import metadata`` takes it as is)
    spec.loader.exec_module(module)
