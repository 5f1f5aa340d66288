"""Start-up cost guards: what importing msa loads, and one cache entry per Numba kernel."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from numba.core.registry import CPUDispatcher

import msa
from msa.backends.cpu import align as cpu_align
from msa.backends.cpu import kmers as cpu_kmers
from msa.backends.cpu import lcs as cpu_lcs
from msa.backends.cpu import sw as cpu_sw

REPO = Path(__file__).resolve().parents[2]


def test_importing_the_cli_loads_neither_numba_nor_rich() -> None:
    # --help, `msa score` and bad-input errors must not wait for Numba (~0.5 s) or rich.
    code = (
        "import sys, msa, msa.cli; "
        "print(sorted(m for m in ('numba', 'rich', 'scipy', 'Bio') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
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
    assert not cpu_align._align_pair.targetoptions.get("parallel")
