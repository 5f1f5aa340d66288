"""The backend's start on background threads, begun before the input is read (the CLI's runs).

Above :mod:`msa.backends` and :mod:`msa.pipeline`: it imports the pipeline
modules early so that they load while the input is read; nothing below imports it.
"""
from __future__ import annotations

import sys
import threading

from msa.backends import Backend, prepare_backend


class BackendStart:
    """``get_backend`` on background threads, begun before the input is read.

    Importing CuPy and Numba, creating the CUDA context and loading the kernels
    (~0.7 s on an H200 machine), and Numba's typing registries (~0.4 s, loaded
    by the first compiled function of any run) need nothing from the input.
    Begun first, they run while the main thread reads and de-duplicates it,
    NumPy work that mostly releases the GIL. Once the imports are done, the
    registries load on a second thread while the first makes the CUDA context
    (C calls), so the two overlap too, and no two threads import the same
    modules at once. ``backend()`` waits for the backend only and raises what
    its start raised (no GPU for ``--device cuda``) in the caller's thread;
    leaving the ``with`` block waits for both threads, so no error path exits
    the process while a CUDA context is half made.
    """

    def __init__(self, device: str, memory_cap: int | None = None) -> None:
        self._device = device
        self._memory_cap = memory_cap
        self._result: tuple[Backend, str | None] | None = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._registries = threading.Thread(target=_load_numba_registries, name="msa-numba-start", daemon=True)
        self._thread = threading.Thread(target=self._run, name="msa-backend-start", daemon=True)
        self._thread.start()

    def __enter__(self) -> BackendStart:
        return self

    def __exit__(self, *exc: object) -> None:
        self._thread.join()
        if self._registries.is_alive():
            self._registries.join()

    def _run(self) -> None:
        try:
            make, note = prepare_backend(self._device, self._memory_cap)
            import msa.pipeline  # noqa: F401  (and the tree and progressive modules)

            self._registries.start()
            self._result = make(), note
        except BaseException as exc:  # re-raised by backend(), in the main thread
            self._error = exc
        finally:
            self._ready.set()

    def backend(self, *, quiet: bool = False) -> Backend:
        """The started backend (waits for it); prints ``auto``'s choice unless quiet."""
        self._ready.wait()
        if self._result is None:
            assert self._error is not None
            raise self._error
        backend, note = self._result
        if note is not None and not quiet:
            print(note, file=sys.stderr)
        return backend


def _load_numba_registries() -> None:
    """Numba's registries, imported on the thread (importing Numba alone takes ~0.5 s)."""
    from msa.backends.cpu import load_numba_registries

    load_numba_registries()
