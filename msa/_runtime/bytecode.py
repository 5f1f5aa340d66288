"""A bytecode cache of msa's own where the interpreter keeps none for the packages it imports.

An image built by a tool that does not compile bytecode at install (``uv pip install``
without ``--compile-bytecode``), run with ``PYTHONDONTWRITEBYTECODE=1`` (the usual
Dockerfile line) or from a package tree it cannot write, compiles NumPy, Numba and Typer
from their sources in every process: on the device host that was ~0.25 s for NumPy and
~0.6 s for Numba of each run, more than FAMSA's whole run on most 10^3 families; msa's own
~60 modules took ~90 ms of each run on the 2-core dev machine. There the
CLI points ``sys.pycache_prefix`` at a folder of msa's user cache, so that the first run
writes the compiled modules there (never into the package tree) and every later run reads
them; msa's child processes (Dask's workers) inherit it through the environment. A prefix the
user chose (``PYTHONPYCACHEPREFIX``, ``-X pycache_prefix``) is left alone.
"""
from __future__ import annotations

import importlib.util
import os
import sys

#: Packages every alignment imports, msa among them: if any of them has no cached bytecode
#: beside its source, the interpreter is compiling them in every process.
PROBES = ("msa", "numpy", "numba", "typer")


def cache_home() -> str:
    """msa's user cache folder (``$XDG_CACHE_HOME/msa``, else ``~/.cache/msa``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "msa")


def _uncached(name: str) -> bool:
    """Whether package ``name`` is installed from source files without their bytecode."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    origin = spec.origin if spec is not None else None
    if origin is None or not origin.endswith(".py"):
        return False
    return not os.path.exists(importlib.util.cache_from_source(origin))


def keep_bytecode() -> str | None:
    """Point this process's bytecode, and its children's (Dask's workers import Dask, CuPy and
    msa too), at msa's cache where :data:`PROBES` have none of their own.

    Returns the prefix set, else None."""
    if sys.pycache_prefix is not None or not any(_uncached(name) for name in PROBES):
        return None
    sys.pycache_prefix = os.path.join(cache_home(), "pycache")
    sys.dont_write_bytecode = False
    os.environ["PYTHONPYCACHEPREFIX"] = sys.pycache_prefix
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    return sys.pycache_prefix
