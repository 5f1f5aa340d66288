"""The compiled kernels shipped in msa/_cubin (no GPU needed): one fatbin for every
``kernels.load(...)`` the GPU path makes, built from the current sources and options.

A failure here after editing a kernel, a ``-D`` define or the loader's options means:
run ``python kernels/build.py`` (needs nvcc) and commit msa/_cubin. Until then the
loader compiles the changed module with NVRTC, as before, so nothing runs stale code.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from msa import kernels

ROOT = Path(__file__).resolve().parents[2]


def _build_script():
    spec = importlib.util.spec_from_file_location("msa_kernels_build", ROOT / "kernels" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BUILD = _build_script()
USED = BUILD.used_modules()
MANIFEST = json.loads((kernels.cubin_dir() / kernels.MANIFEST).read_text())
REBUILD = "stale shipped kernels: run `python kernels/build.py` and commit msa/_cubin"


def test_the_call_sites_are_found() -> None:
    """The scan of msa/backends/cuda finds every module the GPU path loads, with its defines."""
    keys = {name: tuple(k for k, _ in defines) for name, defines in USED}
    assert keys == {
        "build_parent": ("BP_THREADS", "N_INFO"),
        "kmer_counts": ("NR_THREADS",),
        "lcs_distance": (),
        "lcs_prim": ("PRIM_THREADS",),
        "merge_dp": ("SCAN_THREADS", "SCAN_K", "MI_THREADS", "CS_THREADS", "CS_ROWS", "PUBLISH_ROWS", "TB_WARPS",
                     "N_INFO"),
        "records": ("RECORD_THREADS",),
        "segments": ("SEG_CHUNK", "SEG_THREADS"),
        "sequence_profile": ("BP_THREADS", "ROWS_WARPS", "ROWS_RING", "ROWS_STRIDE", "N_INFO"),
        "sw_distance": (),
    }
    assert len(keys) == len(USED) == len(list(kernels.kernel_dir().glob("*.cu")))


def test_scan_refuses_a_define_chosen_at_run_time(tmp_path: Path) -> None:
    (tmp_path / "stage.py").write_text("def f(n):\n    return kernels.load('lcs_prim', (('PRIM_THREADS', n),), 0)\n")
    with pytest.raises(ValueError, match="not constants"):
        BUILD.used_modules(tmp_path)


def test_manifest_is_built_with_the_current_recipe() -> None:
    assert MANIFEST["recipe"] == BUILD.recipe(), REBUILD


@pytest.mark.parametrize(("name", "defines"), USED, ids=[kernels.fatbin_name(n, d) for n, d in USED])
def test_every_load_has_a_current_fatbin(name: str, defines) -> None:
    """Its manifest hash is that of today's source and options, and the loader finds it."""
    entry = MANIFEST["modules"].get(kernels.fatbin_name(name, defines))
    assert entry is not None, f"no fatbin for {name} {defines}; {REBUILD}"
    assert entry["source_sha256"] == kernels.fingerprint(kernels.source(name), kernels.options(name, defines)), REBUILD
    path = kernels.shipped(name, defines)
    assert path is not None and path.name == entry["file"]
    data = path.read_bytes()
    assert len(data) == entry["bytes"] and hashlib.sha256(data).hexdigest() == entry["fatbin_sha256"], (
        f"{path.name} is not the file the manifest recorded; {REBUILD}")


def test_no_fatbin_is_shipped_that_nothing_loads() -> None:
    wanted = {kernels.fatbin_name(n, d) for n, d in USED}
    assert set(MANIFEST["modules"]) == wanted
    assert {p.name for p in kernels.cubin_dir().glob("*.fatbin")} == wanted


def test_fatbins_stay_small() -> None:
    total = sum(p.stat().st_size for p in kernels.cubin_dir().glob("*.fatbin"))
    assert total < 2_000_000, f"msa/_cubin holds {total:,} bytes"


def test_an_edited_source_is_not_served_from_its_fatbin(monkeypatch) -> None:
    """The loader's check: a changed source or define misses the manifest (NVRTC compiles it)."""
    name, defines = next((n, d) for n, d in USED if d)
    assert kernels.shipped(name, defines) is not None
    assert kernels.shipped(name, defines, kernels.source(name) + "\n// edited\n") is None
    assert kernels.shipped(name, tuple((k, v + 1) for k, v in defines)) is None
    monkeypatch.setattr(kernels, "NVRTC_OPTIONS", kernels.NVRTC_OPTIONS + ("-lineinfo",))
    assert kernels.shipped(name, defines) is None


def test_a_changed_python_constant_is_not_served_from_its_fatbin(monkeypatch) -> None:
    """The CONSTANTS a module is passed count in its hash: a new value means NVRTC, not a stale fatbin."""
    import msa.profile

    assert kernels.shipped("segments", dict(USED)["segments"]) is not None
    monkeypatch.setattr(msa.profile, "N_COUNTS", msa.profile.N_COUNTS + 1)
    kernels.constants.cache_clear()
    try:
        assert ("N_COUNTS", msa.profile.N_COUNTS) in kernels.constants("segments")
        assert kernels.shipped("segments", dict(USED)["segments"]) is None
    finally:
        kernels.constants.cache_clear()


CUOBJDUMP = shutil.which("cuobjdump")


@pytest.mark.skipif(CUOBJDUMP is None, reason="cuobjdump is not on PATH")
@pytest.mark.parametrize(("name", "defines"), USED[:1])
def test_fatbin_holds_the_recipes_targets(name: str, defines) -> None:
    path = kernels.shipped(name, defines)
    cmd = [CUOBJDUMP, "-lelf", "-lptx", str(path)]
    listing = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert sorted(int(a) for a in re.findall(r"sm_(\d+)\.cubin", listing)) == sorted(BUILD.SASS_ARCHS)
    assert f"sm_{BUILD.PTX_ARCH}.ptx" in listing


class _FakeCupy:
    """Just what kernels.load touches of CuPy: Device, RawModule, driver.CUDADriverError."""

    class CUDADriverError(RuntimeError):
        pass

    def __init__(self, fail_path_load: bool = False) -> None:
        self.made: list[dict] = []
        fake = self

        class RawModule:
            def __init__(self, **kw) -> None:
                self.kw = kw
                fake.made.append(kw)

            def compile(self) -> None:
                if fail_path_load and "path" in self.kw:
                    raise fake.CUDADriverError("CUDA_ERROR_UNSUPPORTED_PTX_VERSION")

        class Device:
            def __init__(self, device: int) -> None:
                pass

            def __enter__(self):
                return self

            def __exit__(self, *exc) -> None:
                pass

        self.RawModule = RawModule
        driver = type("driver", (), {"CUDADriverError": self.CUDADriverError})
        self.cuda = type("cuda", (), {"Device": Device, "driver": driver})


@pytest.fixture
def fake_cupy(monkeypatch):
    def install(**kw) -> _FakeCupy:
        fake = _FakeCupy(**kw)
        monkeypatch.setitem(sys.modules, "cupy", fake)
        kernels.load.cache_clear()
        kernels.ROUTES.clear()
        return fake

    monkeypatch.delenv("MSA_KERNELS", raising=False)
    yield install
    kernels.load.cache_clear()
    kernels.ROUTES.clear()


def test_load_takes_the_fatbin(fake_cupy) -> None:
    fake = fake_cupy()
    for name, defines in USED:
        module = kernels.load(name, defines, 0)
        assert module.kw == {"path": str(kernels.shipped(name, defines))}
        assert kernels.ROUTES[name, defines, 0] == "fatbin"
    assert len(fake.made) == len(USED)


def test_load_falls_back_to_nvrtc_when_the_driver_refuses_the_fatbin(fake_cupy) -> None:
    fake_cupy(fail_path_load=True)
    name, defines = USED[0]
    module = kernels.load(name, defines, 0)
    assert module.kw == {"code": kernels.source(name), "options": kernels.options(name, defines)}
    assert "UNSUPPORTED_PTX_VERSION" in kernels.ROUTES[name, defines, 0]


def test_load_compiles_an_edited_source_and_obeys_msa_kernels(fake_cupy, monkeypatch) -> None:
    fake_cupy()
    name, defines = USED[0]
    original = kernels.source
    edited = original(name) + "\n// edited\n"
    monkeypatch.setattr(kernels, "source", lambda n: edited)
    assert kernels.load(name, defines, 0).kw["code"] == edited
    assert kernels.ROUTES[name, defines, 0].startswith("nvrtc: no shipped fatbin")
    monkeypatch.setattr(kernels, "source", original)
    fake_cupy()
    monkeypatch.setenv("MSA_KERNELS", "nvrtc")
    assert "code" in kernels.load(name, defines, 0).kw
