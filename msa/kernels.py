"""The one CUDA kernel loader: finds a kernel's .cu source, compiles it once, caches it.

Sources live in the top-level ``kernels/`` folder of a checkout and are shipped
inside the wheel as ``msa/_kernels``. Local headers (``*.cuh``) are inlined
as text because CuPy's compile cache keys on the source string, not on included files.
"""
from __future__ import annotations

import functools
import re
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
    """Kernel source with its ``#include "*.cuh"`` headers inlined (each once, ``#pragma once``
    honoured by inlining only the first) and #line directives for readable errors."""
    folder = kernel_dir()
    return f'#line 1 "{name}.cu"\n' + _inline(folder, f"{name}.cu", set())


def _inline(folder: Path, file: str, seen: set[str]) -> str:
    out = []
    for number, line in enumerate((folder / file).read_text().splitlines(), start=1):
        match = _INCLUDE.match(line)
        if match and (folder / match[1]).is_file():
            if match[1] not in seen:
                seen.add(match[1])
                out.append(f'#line 1 "{match[1]}"')
                out.append(_inline(folder, match[1], seen))
            out.append(f'#line {number + 1} "{file}"')
        elif line.strip() != "#pragma once":  # the inliner includes each header once
            out.append(line)
    return "\n".join(out)


_INCLUDE = re.compile(r'\s*#include\s+"([\w.]+\.cuh)"')


@functools.cache
def load(name: str, defines: tuple[tuple[str, int], ...] = (), device: int = 0):
    """Compiled ``cupy.RawModule`` for ``kernels/<name>.cu``, cached per options and device."""
    import cupy

    options = NVRTC_OPTIONS + tuple(f"-D{k}={v}" for k, v in defines)
    with cupy.cuda.Device(device):
        return cupy.RawModule(code=source(name), options=options)
