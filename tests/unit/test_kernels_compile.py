"""Every CUDA kernel module compiles for Hopper with the options the loader gives it, and not
without its -D constants (no GPU needed; skipped without nvcc)."""
from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from msa import kernels

NVCC = shutil.which("nvcc")
ROOT = Path(__file__).resolve().parents[2]


def _used_modules() -> list:
    spec = importlib.util.spec_from_file_location("msa_kernels_build", ROOT / "kernels" / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    return build.used_modules()


USED = _used_modules()


def _nvcc_ptx(name: str, opts: tuple[str, ...], tmp_path: Path) -> subprocess.CompletedProcess:
    src = tmp_path / f"{name}.cu"
    src.write_text(kernels.source(name))  # what the loader hands to NVRTC, headers inlined
    cmd = [NVCC, "-arch=sm_90", "--ptx", *opts, "-o", str(tmp_path / f"{name}.ptx"), str(src)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize(("name", "defines"), USED, ids=[n for n, _ in USED])
def test_kernel_compiles(name, defines, tmp_path):
    done = _nvcc_ptx(name, kernels.options(name, defines), tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize(("name", "defines"), USED, ids=[n for n, _ in USED])
def test_kernel_refuses_to_compile_without_its_constants(name, defines, tmp_path):
    """The sources hold no copy of a Python constant: without the -D options they stop at an #error."""
    done = _nvcc_ptx(name, kernels.NVRTC_OPTIONS, tmp_path)
    assert done.returncode != 0 and re.search(r"must be passed with -D", done.stderr), done.stderr


def test_constants_come_from_their_python_definitions() -> None:
    from msa.alphabet import N_CODES
    from msa.distances.kmers import EMPTY_DISTANCE, N_KMERS, SECTION
    from msa.profile import GE, GO, N_COUNTS, TGE, TGO

    assert dict(kernels.constants("merge_dp")) == {
        "NRES": N_CODES, "NCNT": N_COUNTS, "C_GO": GO, "C_GE": GE, "C_TGO": TGO, "C_TGE": TGE,
        "KMER_SECTION": SECTION, "KMER_TABLE_SIZE": N_KMERS, "EMPTY_DISTANCE": EMPTY_DISTANCE,
    }
    assert "-DNCNT=28" in kernels.options("build_parent") and "-DSW_CODES=24" in kernels.options("sw_distance")


def test_no_source_defines_a_constant_it_is_passed() -> None:
    """Every name of kernels.CONSTANTS and of a kernels.load call's defines reaches its file only by
    -D: a ``#define NAME`` there would be a second, hand-kept definition."""
    passed = {name: {k for k, _ in kernels.constants(name) + defines} for name, defines in USED}
    for name, keys in passed.items():
        for file in kernels.files(name):
            text = (kernels.kernel_dir() / file).read_text()
            copies = [k for k in keys if re.search(rf"^\s*#\s*define\s+{k}\b", text, re.M)]
            assert not copies, f"{file} defines {copies}, which {name} is passed with -D"
    assert set(kernels.CONSTANTS) <= {p.name for p in kernels.kernel_dir().glob("*.cu*")}


def test_installed_package_ships_the_kernels() -> None:
    """`pip install .` puts every kernels/*.cu inside the package, where kernels.load looks first,
    and the fatbins of msa/_cubin."""
    from importlib import metadata
    from pathlib import Path

    try:
        files = metadata.files("msa")
        direct = metadata.distribution("msa").read_text("direct_url.json") or "{}"
    except metadata.PackageNotFoundError:
        pytest.skip("msa is not pip-installed here")
    if json.loads(direct).get("dir_info", {}).get("editable"):  # PEP 610: the checkout is the package
        pytest.skip("msa is installed editable (pip install -e .): nothing is copied")
    installed = {str(f).replace("\\", "/") for f in files or ()}
    checkout = Path(__file__).resolve().parents[2] / "kernels"
    sources = sorted(p.name for p in checkout.glob("*.cu*"))
    assert sources, "no kernel sources in the checkout"
    missing = [name for name in sources if f"msa/_kernels/{name}" not in installed]
    # and the compiled kernels (tests/unit/test_kernels_shipped.py checks they are current)
    shipped = sorted(p.name for p in (checkout.parent / "msa" / "_cubin").iterdir())
    assert "manifest.json" in shipped
    missing += [name for name in shipped if f"msa/_cubin/{name}" not in installed]
    assert not missing, f"not in the installed package: {missing}"
