"""The one CUDA kernel loader: finds a kernel's .cu source, compiles it once, caches it.

Sources live in the top-level ``kernels/`` folder of a checkout and are shipped
inside the wheel as ``msa/_kernels``. ``common.cuh`` is inlined as text because
CuPy's compile cache keys on the source string, not on included files.
"""
from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

#: Options every kernel is compiled with. --fmad=false keeps float arithmetic
#: rounding as NumPy's does, so decisions taken on floats match the CPU path.
NVRTC_OPTIONS: tuple[str, ...] = ("-std=c++17", "--fmad=false")


def kernel_dir() -> Path:
    """Where the .cu files are: inside the installed package, else the checkout."""
    packaged = resources.files("msa") / "_kernels"
    if packaged.is_dir():
        return Path(str(packaged))
    checkout = Path(__file__).resolve().parent.parent / "kernels"
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError("CUDA kernel sources not found (neither msa/_kernels nor ./kernels)")


def source(name: str) -> str:
    """Kernel source with common.cuh inlined and a #line directive for readable errors."""
    folder = kernel_dir()
    text = (folder / f"{name}.cu").read_text()
    common = folder / "common.cuh"
    if '#include "common.cuh"' in text and common.is_file():
        text = text.replace(
            '#include "common.cuh"',
            '#line 1 "common.cuh"\n' + common.read_text() + f'\n#line 1 "{name}.cu"',
        )
    return f'#line 1 "{name}.cu"\n' + text


@functools.cache
def load(name: str, defines: tuple[tuple[str, int], ...] = (), device: int = 0):
    """Compiled ``cupy.RawModule`` for ``kernels/<name>.cu``, cached per options and device."""
    import cupy

    options = NVRTC_OPTIONS + tuple(f"-D{k}={v}" for k, v in defines)
    with cupy.cuda.Device(device):
        return cupy.RawModule(code=source(name), options=options)
