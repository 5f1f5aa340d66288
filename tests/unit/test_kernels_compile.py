"""Every CUDA kernel source compiles for Hopper (no GPU needed; skipped without nvcc)."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from msa import kernels

NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("name", sorted(p.stem for p in kernels.kernel_dir().glob("*.cu")))
def test_kernel_compiles(name, tmp_path):
    src = tmp_path / f"{name}.cu"
    src.write_text(kernels.source(name))  # what the loader hands to NVRTC, common.cuh inlined
    cmd = [NVCC, "-arch=sm_90", "--ptx", *kernels.NVRTC_OPTIONS, "-o", str(tmp_path / f"{name}.ptx"), str(src)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


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
