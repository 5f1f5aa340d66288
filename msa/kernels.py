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

Constants a kernel shares with the Python code are defined once, in Python, and reach the
kernel as ``-DNAME=value`` options (so they are part of the hash above): the data-layout ones
listed by source file in :data:`CONSTANTS`, the launch shapes (block sizes, tiles) in the
``kernels.load`` call of the stage that launches them. The sources refuse to compile without them.
"""
from __future__ import annotations

import functools
import hashlib
import importlib
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
#: The Python constants each kernel source file receives as ``-DNAME=value``
#: ({file: {NAME: "module:attribute"}}); a module gets those of every file it inlines, in
#: inlining order, ahead of the defines of its ``kernels.load`` call.
CONSTANTS: dict[str, dict[str, str]] = {
    "common.cuh": {
        "KMER_SECTION": "msa.distances.kmers:SECTION",
        "KMER_TABLE_SIZE": "msa.distances.kmers:N_KMERS",
        "EMPTY_DISTANCE": "msa.distances.kmers:EMPTY_DISTANCE",
    },
    "merge.cuh": {
        "NRES": "msa.alphabet:N_CODES",
        "NCNT": "msa.profile:N_COUNTS",
        "C_GO": "msa.profile:GO",
        "C_GE": "msa.profile:GE",
        "C_TGO": "msa.profile:TGO",
        "C_TGE": "msa.profile:TGE",
    },
    "segments.cu": {"N_COUNTS": "msa.profile:N_COUNTS"},
    "sw_distance.cu": {"SW_CODES": "msa.alphabet:N_CODES"},
}
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
    return f'#line 1 "{name}.cu"\n' + _inline(folder, f"{name}.cu", {})


def files(name: str) -> list[str]:
    """The source files of module ``name``: its headers in inlining order, then ``<name>.cu``."""
    seen: dict[str, None] = {}
    _inline(kernel_dir(), f"{name}.cu", seen)
    return [*seen, f"{name}.cu"]


@functools.cache
def constants(name: str) -> tuple[tuple[str, int | float], ...]:
    """The :data:`CONSTANTS` of module ``name``'s files, with their values read from Python."""
    out = []
    for file in files(name):
        for key, where in CONSTANTS.get(file, {}).items():
            module, attribute = where.split(":")
            value = getattr(importlib.import_module(module), attribute)
            if type(value) not in (int, float):
                raise TypeError(f"{where} is {value!r}: a kernel constant must be a Python int or float")
            out.append((key, value))
    return tuple(out)


def _inline(folder: Path, file: str, seen: dict[str, None]) -> str:
    out = []
    for number, line in enumerate((folder / file).read_text().splitlines(), start=1):
        match = _INCLUDE.match(line)
        if match and (folder / match[1]).is_file():
            if match[1] not in seen:
                seen[match[1]] = None
                out.append(f'#line 1 "{match[1]}"')
                out.append(_inline(folder, match[1], seen))
            out.append(f'#line {number + 1} "{file}"')
        elif line.strip() != "#pragma once":  # the inliner includes each header once
            out.append(line)
    return "\n".join(out)


_INCLUDE = re.compile(r'\s*#include\s+"([\w.]+\.cuh)"')


def options(name: str, defines: tuple[tuple[str, int], ...] = ()) -> tuple[str, ...]:
    """NVRTC's options for module ``name`` compiled with ``defines``: ``-DKEY=VALUE`` for each of
    its :func:`constants`, then each of ``defines``."""
    return NVRTC_OPTIONS + tuple(f"-D{k}={v}" for k, v in constants(name) + tuple(defines))


def fingerprint(code: str, opts: tuple[str, ...]) -> str:
    """sha256 of a module's source and options: what its shipped fatbin must have been built from."""
    return hashlib.sha256("\0".join((code, *opts)).encode()).hexdigest()


def fatbin_name(name: str, defines: tuple[tuple[str, int], ...] = ()) -> str:
    """``lcs_prim__PRIM_THREADS-256.fatbin``: one file per module and ``kernels.load`` defines
    (its :func:`constants` are the same for every load, so they count in the hash only)."""
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
    if entry.get("source_sha256") != fingerprint(code, options(name, defines)):
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
        return cupy.RawModule(code=code, options=options(name, defines))
