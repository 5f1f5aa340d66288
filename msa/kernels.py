"""The one CUDA kernel loader: the shipped fatbin of a kernel module, else its .cu source compiled by NVRTC.

Sources live in the top-level ``kernels/`` folder of a checkout and are shipped
inside the wheel as ``msa/_kernels``. Local headers (``*.cuh``) are inlined
as text because CuPy's compile cache keys on the source string, not on included files.

Every (module, defines) that the GPU path loads is also compiled ahead of time by
``kernels/build.py`` (nvcc, SASS for the common GPUs) into ``msa/_cubin/*.fatbin``,
committed and shipped in the wheel, so a user's first run compiles none of them.
``msa/_cubin/manifest.json`` records the sha256 of the source and options each was
built from: :func:`load` takes a fatbin only when that matches what it would hand
NVRTC now, and falls back to NVRTC when it does not (an edited kernel), when there is
none, or when the driver cannot load it (one older than the CUDA 13 toolkit that built it).
``MSA_KERNELS=nvrtc`` in the environment forces the NVRTC route.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from importlib import resources
from pathlib import Path

#: Options every kernel is compiled with. --fmad=false keeps float arithmetic
#: rounding as NumPy's does, so decisions taken on floats match the CPU path.
NVRTC_OPTIONS: tuple[str, ...] = ("-std=c++17", "--fmad=false")
#: The shipped fatbins' index, in :func:`cubin_dir`.
MANIFEST = "manifest.json"
#: How each :func:`load` was served: {(name, defines, device): "fatbin" or "nvrtc: why"}.
ROUTES: dict[tuple, str] = {}


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


def options(defines: tuple[tuple[str, int], ...] = ()) -> tuple[str, ...]:
    """NVRTC's options for a module compiled with ``defines`` (``-DKEY=VALUE`` each)."""
    return NVRTC_OPTIONS + tuple(f"-D{k}={v}" for k, v in defines)


def fingerprint(code: str, opts: tuple[str, ...]) -> str:
    """sha256 of a module's source and options: what its shipped fatbin must have been built from."""
    return hashlib.sha256("\0".join((code, *opts)).encode()).hexdigest()


def fatbin_name(name: str, defines: tuple[tuple[str, int], ...] = ()) -> str:
    """``profile_align__SCAN_THREADS-128__SCAN_K-4.fatbin``: one file per module and defines."""
    return name + "".join(f"__{k}-{v}" for k, v in defines) + ".fatbin"


def cubin_dir() -> Path:
    """Where the shipped fatbins are (``msa/_cubin``, in the checkout and the wheel alike)."""
    return Path(__file__).resolve().parent / "_cubin"


@functools.cache
def _manifest() -> dict:
    try:
        return json.loads((cubin_dir() / MANIFEST).read_text()).get("modules", {})
    except (OSError, ValueError):
        return {}


def shipped(name: str, defines: tuple[tuple[str, int], ...] = (), code: str | None = None) -> Path | None:
    """The shipped fatbin built from exactly this source and these options, else None."""
    entry = _manifest().get(fatbin_name(name, defines))
    if entry is None:
        return None
    code = source(name) if code is None else code
    if entry.get("source_sha256") != fingerprint(code, options(defines)):
        return None
    path = cubin_dir() / entry["file"]
    return path if path.is_file() else None


@functools.cache
def load(name: str, defines: tuple[tuple[str, int], ...] = (), device: int = 0):
    """``cupy.RawModule`` for ``kernels/<name>.cu`` with ``defines``, cached per device: the shipped
    fatbin (loaded now, the driver picking this GPU's SASS) if it matches the source, else NVRTC's
    compile of the source (CuPy's on-disk cache keeps it for the next run)."""
    import cupy

    code = source(name)
    with cupy.cuda.Device(device):
        if os.environ.get("MSA_KERNELS", "").lower() == "nvrtc":
            route = "nvrtc: MSA_KERNELS=nvrtc"
        elif (path := shipped(name, defines, code)) is None:
            route = "nvrtc: no shipped fatbin matches the source"
        else:
            module = cupy.RawModule(path=str(path))
            try:
                module.compile()  # cuModuleLoad now, so that a driver that cannot load it falls back
            except cupy.cuda.driver.CUDADriverError as exc:
                route = f"nvrtc: the driver could not load {path.name} ({exc})"
            else:
                ROUTES[name, defines, device] = "fatbin"
                return module
        ROUTES[name, defines, device] = route
        return cupy.RawModule(code=code, options=options(defines))
