"""The CUDA context made through the driver on a thread of its own while CuPy imports
(the CLI's runs, :class:`msa._runtime.startup.BackendStart`); nothing here picks a backend."""
from __future__ import annotations

import ctypes
import sys
import threading


def start_cuda(device: int = 0) -> None:
    """Import CuPy and make ``device``'s CUDA context, if there is a GPU. The context is made
    through the driver on a thread of its own (:func:`_retain_primary_context`) while CuPy
    imports: the driver call (0.2-0.3 s on the H100 hosts) releases the GIL, the import
    (0.2-0.5 s) needs it, so the two overlap; CuPy's runtime then finds the primary context
    made. msa._runtime.startup runs this beside the Numba import. Errors are left for
    :func:`msa.backends.prepare_backend` to report."""
    context = threading.Thread(target=_retain_primary_context, args=(device,), name="msa-cuda-context", daemon=True)
    context.start()
    try:
        import cupy

        context.join()
        if cupy.is_available():
            with cupy.cuda.Device(device):
                cupy.cuda.runtime.free(0)  # cudaFree(NULL): the runtime takes the primary context
    except Exception:
        pass
    finally:
        context.join()


#: The CUDA driver library's name on each platform (loaded by ctypes; CuPy loads the same one).
_DRIVER_LIBRARY = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"


def _retain_primary_context(device: int) -> None:
    """``cuInit`` and ``cuDevicePrimaryCtxRetain`` through ctypes, which drops the GIL around
    each call. The context is the one the CUDA runtime (CuPy) uses for ``device``; the extra
    reference keeps it for the life of the process, as a CLI run keeps it anyway. No driver,
    no GPU or any failure: nothing is done, and CuPy's own start reports the reason."""
    try:
        driver = ctypes.CDLL(_DRIVER_LIBRARY)
        handle = ctypes.c_int()
        if driver.cuInit(0) != 0 or driver.cuDeviceGet(ctypes.byref(handle), device) != 0:
            return
        driver.cuDevicePrimaryCtxRetain(ctypes.byref(ctypes.c_void_p()), handle)
    except (OSError, AttributeError):
        pass
