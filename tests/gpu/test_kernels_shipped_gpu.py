"""The shipped fatbins (msa/_cubin) on the GPU: every module loads from its fatbin without
NVRTC compiling anything, exposes the same kernels as NVRTC's compile of the source, and a
run gives the same bytes both ways. The other GPU tests (CPU oracle identity) run on the
fatbins too, since kernels.load takes them by default."""
from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from msa import kernels

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy", reason="needs CuPy")

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "datasets" / "examples" / "example.fa"
_spec = importlib.util.spec_from_file_location("msa_kernels_build", REPO / "kernels" / "build.py")
BUILD = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(BUILD)
USED = BUILD.used_modules()
IDS = [kernels.fatbin_name(n, d) for n, d in USED]


def entry_points(module) -> list[str]:
    """Names of a loaded module's kernels, from the driver (cuModuleEnumerateFunctions, CUDA 12.4+)."""
    cuda = ctypes.CDLL("libcuda.so.1")
    if not hasattr(cuda, "cuModuleEnumerateFunctions"):
        pytest.skip("the driver cannot enumerate a module's functions (older than CUDA 12.4)")
    handle = ctypes.c_void_p(module.module.ptr)
    count = ctypes.c_uint()
    assert cuda.cuModuleGetFunctionCount(ctypes.byref(count), handle) == 0
    funcs = (ctypes.c_void_p * count.value)()
    assert cuda.cuModuleEnumerateFunctions(funcs, count, handle) == 0
    names = []
    for f in funcs:
        name = ctypes.c_char_p()
        assert cuda.cuFuncGetName(ctypes.byref(name), ctypes.c_void_p(f)) == 0
        names.append(name.value.decode())
    return sorted(names)


LOAD_ALL = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
from msa import kernels
from test_kernels_shipped_gpu import USED, entry_points
names = {}
for name, defines in USED:
    module = kernels.load(name, defines, 0)
    names[kernels.fatbin_name(name, defines)] = entry_points(module)
    for fn in names[kernels.fatbin_name(name, defines)]:
        module.get_function(fn).kernel  # noqa: B018  (each kernel looked up, as a launch does)
print(json.dumps({"routes": {kernels.fatbin_name(n, d): r for (n, d, _), r in kernels.ROUTES.items()}, "names": names}))
"""


def _env(cache: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MSA_KERNELS"}
    env.update(CUPY_CACHE_DIR=str(cache), CUPY_CACHE_SAVE_CUDA_SOURCE="1", **extra)
    return env


def test_every_module_loads_from_its_fatbin_and_nothing_compiles(tmp_path: Path) -> None:
    """In a fresh process with an empty CuPy cache: all fatbins, every kernel found, cache still empty."""
    cache = tmp_path / "cupy-cache"
    done = subprocess.run([sys.executable, "-c", LOAD_ALL, str(Path(__file__).parent)], env=_env(cache),
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["routes"] == {name: "fatbin" for name in IDS}
    assert all(out["names"][name] for name in IDS)
    compiled = sorted(p.name for p in cache.rglob("*")) if cache.exists() else []
    assert compiled == [], f"NVRTC compiled while loading the shipped kernels: {compiled}"


@pytest.mark.parametrize(("name", "defines"), USED, ids=IDS)
def test_fatbin_and_nvrtc_modules_have_the_same_kernels(name: str, defines) -> None:
    """Same entry points, same static shared memory; registers printed for the record."""
    shipped = cp.RawModule(path=str(kernels.shipped(name, defines)))
    nvrtc = cp.RawModule(code=kernels.source(name), options=kernels.options(name, defines))
    names = entry_points(shipped)
    assert names and names == entry_points(nvrtc)
    for fn in names:
        a, b = shipped.get_function(fn).attributes, nvrtc.get_function(fn).attributes
        assert a["shared_size_bytes"] == b["shared_size_bytes"], fn
        print(f"{fn}: registers fatbin {a['num_regs']} nvrtc {b['num_regs']}, "
              f"local bytes {a['local_size_bytes']} / {b['local_size_bytes']}")


def _run(tmp_path: Path, tag: str, argv: list[str], **env: str) -> Path:
    """``msa ARGV --device cuda`` with an empty CuPy cache of its own; the cache folder."""
    cache = tmp_path / f"cache-{tag}"
    cmd = [sys.executable, "-m", "msa", *argv, "--device", "cuda", "-q"]
    done = subprocess.run(cmd, env=_env(cache, **env), capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return cache


def _ours(sources) -> list[str]:
    """Those of the CuPy cache's saved sources that are msa's kernels (the loader's #line marker)."""
    marks = [f'#line 1 "{n}.cu"' for n, _ in USED]
    return [p.name for p in sources if any(m in p.read_text(errors="replace") for m in marks)]


def _compiled(cache: Path) -> list[Path]:
    return sorted(cache.rglob("*.cu")) if cache.exists() else []


def test_example_is_the_same_from_fatbins_and_from_nvrtc(tmp_path: Path) -> None:
    """The CLI on the bundled example, empty CuPy caches: identical bytes; with the fatbins, none
    of msa's kernels reaches NVRTC, and neither does any CuPy operation (nothing
    compiled on a first run)."""
    shipped, nvrtc = tmp_path / "fatbin.fa", tmp_path / "nvrtc.fa"
    cache = _run(tmp_path, "fatbin", ["align", str(EXAMPLE), "-o", str(shipped)])
    nvrtc_cache = _run(tmp_path, "nvrtc", ["align", str(EXAMPLE), "-o", str(nvrtc)], MSA_KERNELS="nvrtc")
    assert shipped.read_bytes() == nvrtc.read_bytes()
    assert _ours(_compiled(nvrtc_cache)), "MSA_KERNELS=nvrtc compiled none of msa's kernels"
    assert _compiled(cache) == [], f"compiled with NVRTC on a first run: {[p.name for p in _compiled(cache)]}"


def test_gpu_paths_compile_no_cupy_kernel(tmp_path: Path) -> None:
    """PartTree (sampled and MAFFT-style picks over 6-mer tables), 6-mer exact trees, msa add
    and msa merge on the GPU, each with an empty CuPy cache: nothing goes to NVRTC."""
    old, new = tmp_path / "old.fa", tmp_path / "new.fa"
    records = EXAMPLE.read_text().split(">")[1:]
    old.write_text("".join(">" + r for r in records[:60]))
    new.write_text("".join(">" + r for r in records[60:]))
    aligned, added = tmp_path / "old.aln.fa", tmp_path / "added.fa"
    subprocess.run([sys.executable, "-m", "msa", "align", str(old), "-o", str(aligned), "--device", "cpu", "-q"],
                   check=True, cwd=REPO)
    runs = {
        "parttree": ["align", str(EXAMPLE), "-o", str(tmp_path / "p.fa"), "--tree", "parttree"],
        "picks": ["align", str(EXAMPLE), "-o", str(tmp_path / "k.fa"), "--tree", "parttree",
                  "--parttree-split", "picks", "--exact-tree-max", "16"],
        "kmer": ["align", str(EXAMPLE), "-o", str(tmp_path / "d.fa"), "--distance", "kmer"],
        "add": ["add", str(aligned), str(new), "-o", str(added)],
        "merge": ["merge", str(aligned), str(added), "-o", str(tmp_path / "m.fa")],
    }
    compiled = {tag: [p.name for p in _compiled(_run(tmp_path, tag, argv))] for tag, argv in runs.items()}
    assert compiled == {tag: [] for tag in runs}
