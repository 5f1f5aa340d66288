"""Compile every CUDA kernel module the GPU path loads into a fatbin shipped in the wheel.

Run by a developer with nvcc (after changing any ``kernels/*.cu``/``*.cuh``, a ``-D``
define of a ``kernels.load(...)`` call, a Python constant of ``msa.kernels.CONSTANTS``,
``msa.kernels.NVRTC_OPTIONS`` or the recipe below)::

    python kernels/build.py            # rebuild what is stale, rewrite msa/_cubin/manifest.json
    python kernels/build.py --check    # only say what is stale (exit 1 if anything is)

Users' machines have no nvcc (CuPy's wheels bring NVRTC only), so the fatbins are built
here and committed: ``msa/_cubin/<module>[__<DEFINE>-<value>...].fatbin`` plus
``manifest.json``, which records for each one the sha256 of what the loader would hand
NVRTC (the source with its headers inlined, then the options). :func:`msa.kernels.load`
uses a fatbin only when that hash matches the current source and options, so an edited
kernel never runs stale code: it is compiled by NVRTC from source as before, and
``tests/unit/test_kernels_shipped.py`` fails until this script is rerun.

Which (module, defines) to build is read from the code itself: every
``kernels.load("name", ((KEY, VALUE), ...), ...)`` call in ``msa/backends/cuda/*.py``, with
VALUEs that are int literals or module-level int constants. A define chosen at run time
cannot be read that way; :func:`used_modules` raises on one (list its values in EXTRA).

Each fatbin holds SASS for sm_80, sm_90 and sm_100 (a cubin also runs on the later minor
versions of its major: sm_80's on 8.6 and 8.9, sm_100's on 10.3) and the PTX of compute_90,
which the driver JIT-compiles (once, into its own cache) only on a GPU with none of these, 9.0
or newer. The GPU path needs 182 KiB of shared memory per block (nearest_reference), which
only 9.0 and 10.x GPUs have; sm_80 is there for when that changes. nvcc gets the loader's
NVRTC options plus ``-ftz=true``, which CuPy appends to every NVRTC compile.
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from msa import kernels  # noqa: E402  (the checkout's loader: same source() and options)

#: SASS targets, then the PTX target: -gencode arch=compute_XY,code=sm_XY for each.
SASS_ARCHS = (80, 90, 100)
PTX_ARCH = 90
#: What CuPy adds to NVRTC's options (cupy.cuda.compiler._compile_with_cache_cuda) that
#: changes code: flush float32 denormals to zero. The rest it adds (-arch, -I of its
#: headers, --device-as-default-execution-space, --pch) do not change these kernels' code.
NVCC_EXTRA = ("-ftz=true",)
#: Fatbin compression: 'size' makes the fatbins about 5x smaller; a compressed
#: fatbin from CUDA 13 needs a CUDA 13 driver (580+), as anything CUDA 13 builds does.
COMPRESS = "size"
#: Defines chosen at run time, which the call sites cannot show: {module: [defines, ...]}.
EXTRA: dict[str, list[tuple[tuple[str, int], ...]]] = {}


def recipe() -> dict:
    """Everything besides the source and options that shapes a fatbin (a change rebuilds all)."""
    return {"sass": list(SASS_ARCHS), "ptx": PTX_ARCH, "nvcc_extra": list(NVCC_EXTRA), "compress": COMPRESS}


def used_modules(folder: Path = ROOT / "msa" / "backends" / "cuda") -> list[tuple[str, tuple[tuple[str, int], ...]]]:
    """Every (module, defines) that a ``kernels.load(...)`` call under ``folder`` asks for, sorted."""
    found = set()
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        constants = {
            target.id: node.value.value
            for node in tree.body
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant)
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name) and isinstance(node.value.value, int)
        }
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "load"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "kernels"
            ):
                continue
            where = f"{path.name}:{node.lineno}"
            try:
                name = ast.literal_eval(node.args[0])
                defines = _defines(node.args[1], constants) if len(node.args) > 1 else ()
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                raise ValueError(f"{where}: kernels.load(...) arguments are not constants ({exc!r}); "
                                 "list the values it can take in kernels/build.py EXTRA") from None
            found.add((name, defines))
    for name, sets in EXTRA.items():
        found.update((name, tuple(d)) for d in sets)
    return sorted(found)


def _defines(node: ast.expr, constants: dict[str, int]) -> tuple[tuple[str, int], ...]:
    if not isinstance(node, ast.Tuple):
        raise TypeError("defines must be a tuple literal")
    out = []
    for pair in node.elts:
        if not (isinstance(pair, ast.Tuple) and len(pair.elts) == 2):
            raise TypeError("each define must be a (KEY, VALUE) tuple")
        key, value = pair.elts
        value = constants[value.id] if isinstance(value, ast.Name) else ast.literal_eval(value)
        out.append((ast.literal_eval(key), value))
    return tuple(out)


def nvcc_command(nvcc: str, name: str, defines, src: Path, out: Path) -> list[str]:
    gencode = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in SASS_ARCHS]
    gencode.append(f"-gencode=arch=compute_{PTX_ARCH},code=compute_{PTX_ARCH}")
    return [nvcc, "-fatbin", *kernels.options(name, defines), *NVCC_EXTRA, f"--compress-mode={COMPRESS}", *gencode,
            "-o", str(out), str(src)]


def build_one(nvcc: str, name: str, defines, out_dir: Path) -> dict:
    code = kernels.source(name)
    out = out_dir / kernels.fatbin_name(name, defines)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / f"{name}.cu"
        src.write_text(code)
        cmd = nvcc_command(nvcc, name, defines, src, Path(tmp) / out.name)
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}\n{done.stderr}")
        shutil.copyfile(Path(tmp) / out.name, out)
    data = out.read_bytes()
    return {
        "module": name,
        "defines": [list(d) for d in defines],
        "constants": [list(c) for c in kernels.constants(name)],
        "source_sha256": kernels.fingerprint(code, kernels.options(name, defines)),
        "file": out.name,
        "bytes": len(data),
        "fatbin_sha256": hashlib.sha256(data).hexdigest(),
        "nvcc": nvcc_version(nvcc),
    }


def stale(manifest: dict, wanted) -> list[tuple[str, tuple]]:
    """The wanted (module, defines) whose fatbin is missing or built from other source/options/recipe."""
    entries = manifest.get("modules", {}) if manifest.get("recipe") == recipe() else {}
    out = []
    for name, defines in wanted:
        entry = entries.get(kernels.fatbin_name(name, defines))
        current = kernels.fingerprint(kernels.source(name), kernels.options(name, defines))
        missing = entry is None or not (kernels.cubin_dir() / entry["file"]).is_file()
        if missing or entry["source_sha256"] != current:
            out.append((name, defines))
    return out


def nvcc_version(nvcc: str) -> str:
    text = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    return next((l.strip() for l in text.splitlines() if "release" in l), text.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only list stale fatbins (exit 1 if any)")
    parser.add_argument("--all", action="store_true", help="rebuild every fatbin, stale or not")
    parser.add_argument("--nvcc", default=shutil.which("nvcc") or "nvcc")
    args = parser.parse_args(argv)

    out_dir = kernels.cubin_dir()
    manifest_path = out_dir / kernels.MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    wanted = used_modules()
    todo = wanted if args.all else stale(manifest, wanted)
    if args.check:
        for name, defines in todo:
            print(f"stale: {kernels.fatbin_name(name, defines)}")
        return 1 if todo else 0

    out_dir.mkdir(parents=True, exist_ok=True)
    keep = {} if manifest.get("recipe") != recipe() else dict(manifest.get("modules", {}))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for entry in pool.map(lambda job: build_one(args.nvcc, *job, out_dir), todo):
            keep[entry["file"]] = entry
            print(f"built {entry['file']} ({entry['bytes']:,} bytes)")
    wanted_files = {kernels.fatbin_name(n, d) for n, d in wanted}
    modules = {f: keep[f] for f in sorted(wanted_files)}
    for old in out_dir.glob("*.fatbin"):
        if old.name not in wanted_files:
            old.unlink()
            print(f"removed {old.name} (no kernels.load() asks for it)")
    manifest = {"recipe": recipe(), "modules": modules}
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    total = sum(e["bytes"] for e in modules.values())
    print(f"{len(modules)} fatbins, {total:,} bytes, manifest {manifest_path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
