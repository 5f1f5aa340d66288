"""Compiled code shipped in the wheel (msa/jit.py, msa/_runtime/precompile.py, hatch_build.py).

The installed-package tests run the ``msa`` that ``pip install .`` put in this
environment (CI installs it from scratch, non-editable) in a subprocess with an
empty Numba cache of its own, so anything it does not find in ``msa/_jitcache``
is compiled, and counted. They skip under an editable install (which compiles on
first use, as numba.njit(cache=True) does) and where the installed package is not
this checkout's source.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest

from msa import jit
from msa._runtime.precompile import DNA, PROTEIN, family

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "datasets" / "examples" / "example.fa"

#: Runs ``msa ARGV`` in-process and prints, as its last line, the functions Numba compiled.
RUN_COUNTING = textwrap.dedent(
    """
    import json, sys
    from numba.core import event

    compiled = []

    class Count(event.Listener):
        def on_start(self, ev):
            pass

        def on_end(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__module__ + "." + ev.data["dispatcher"].py_func.__qualname__
                            + str(ev.data["args"]))

    event.register("numba:compile", Count())
    import msa
    from msa.__main__ import main

    sys.argv = ["msa"] + json.loads(sys.argv[1])
    try:
        main()
    except SystemExit as exc:
        assert not exc.code, exc.code
    print(json.dumps({"file": msa.__file__, "compiled": compiled}))
    """
)


def _clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "PYTHON"))}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba-cache")  # empty: only msa/_jitcache can answer
    env["NUMBA_NUM_THREADS"] = "2"
    return env


def _run_counting(argv: list[str], cwd: Path, env: dict[str, str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", RUN_COUNTING, json.dumps(argv)], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _names(compiled: list[str]) -> str:
    """msa's own functions (Numba's internal ones compile with them), else all."""
    return ", ".join([c for c in compiled if c.startswith("msa.")] or compiled)


@pytest.fixture(scope="module")
def installed() -> Path:
    """The installed (non-editable) msa package folder, from this checkout's source."""
    try:
        dist = metadata.distribution("msa")
    except metadata.PackageNotFoundError:
        pytest.skip("msa is not pip-installed here")
    url = json.loads(dist.read_text("direct_url.json") or "{}")
    if url.get("dir_info", {}).get("editable"):
        pytest.skip("editable install: nothing is shipped, Numba compiles on first use into __pycache__")
    folder = Path(str(dist.locate_file("msa")))
    if not (folder / "jit.py").is_file() or _stamp(folder) != _stamp(jit.PACKAGE):
        if os.environ.get("CI"):  # CI installs this checkout: a mismatch is the stamp's fault
            pytest.fail(f"the installed msa ({folder}) does not stamp as this checkout's source")
        pytest.skip(f"the installed msa ({folder}) is not this checkout's source; reinstall to test it")
    assert (folder / "_jitcache").is_dir(), (
        f"{folder} has no _jitcache: the wheel was built without compiling (hatch_build.py)"
    )
    return folder


def _stamp(folder: Path) -> str:
    saved = jit.PACKAGE
    try:
        jit.PACKAGE = folder
        return jit.package_stamp.__wrapped__()
    finally:
        jit.PACKAGE = saved


def test_the_example_compiles_nothing(installed: Path, tmp_path: Path) -> None:
    """The README's first command, run as a new user would after `pip install .`, loads every
    function from the shipped cache (no JIT on the user's machine)."""
    env = _clean_env(tmp_path)
    out = _run_counting(["align", str(EXAMPLE), "-o", str(tmp_path / "x.fa"), "--tree-out", str(tmp_path / "t.nwk")],
                        tmp_path, env)
    assert Path(out["file"]).resolve().parent == installed.resolve()
    assert out["compiled"] == [], "compiled on first use (not in msa/_jitcache): " + _names(out["compiled"])
    assert (tmp_path / "x.fa").stat().st_size > 0
    assert not any((tmp_path / "numba-cache").rglob("*.nbi")), "something was cached outside msa/_jitcache"


def test_other_commands_compile_nothing(installed: Path, tmp_path: Path) -> None:
    """Nucleotides, PartTree, msa add and msa merge: also all shipped."""
    env = _clean_env(tmp_path)
    dna = tmp_path / "dna.fa"
    dna.write_text("".join(f">{n}\n{s}\n" for n, s in family(5, 80, 120, DNA)))
    new = tmp_path / "new.fa"
    new.write_text("".join(f">n{n}\n{s}\n" for n, s in family(6, 10, 150, PROTEIN)))
    script = [
        ["align", str(dna), "-o", str(tmp_path / "dna.aln.fa")],
        ["align", str(EXAMPLE), "--tree", "parttree", "--exact-tree-max", "50", "-o", str(tmp_path / "a.fa")],
        ["add", str(tmp_path / "a.fa"), str(new), "-o", str(tmp_path / "b.fa")],
        ["merge", str(tmp_path / "a.fa"), str(tmp_path / "b.fa"), "-o", str(tmp_path / "c.fa")],
        ["align", str(dna), str(EXAMPLE), str(new), "-O", str(tmp_path / "many")],  # small families together
    ]
    for argv in script:
        out = _run_counting(argv, tmp_path, env)
        assert out["compiled"] == [], f"msa {argv[0]} compiled: " + _names(out["compiled"])


def test_shipped_files_stay_as_installed(installed: Path) -> None:
    """Runs never write into msa/_jitcache: every file there is the wheel's, byte for byte."""
    files = {str(f): f for f in metadata.files("msa") or () if "/_jitcache/" in str(f).replace("\\", "/")}
    assert files, "RECORD lists no msa/_jitcache files"
    on_disk = {p for p in (installed / "_jitcache").rglob("*") if p.is_file()}
    recorded = {Path(str(f.locate())).resolve() for f in files.values()}
    assert {p.resolve() for p in on_disk} == recorded
    for f in files.values():
        digest = base64.urlsafe_b64encode(hashlib.sha256(Path(str(f.locate())).read_bytes()).digest()).rstrip(b"=")
        assert f.hash is not None and f.hash.value == digest.decode(), f"{f} changed since install"


def test_the_stamp_covers_every_module_of_the_package(tmp_path: Path) -> None:
    """The source stamp hashes each ``.py`` file of the package and its subpackages, by path,
    and nothing under the shipped entries, ``__pycache__`` or a data folder; editing any such
    module changes it."""
    package = tmp_path / "msa"
    for rel in ("__init__.py", "a.py", "sub/__init__.py", "sub/b.py", "sub/deep/__init__.py", "sub/deep/c.py",
                "_kernels/build.py", "_kernels/pkg/__init__.py", "_kernels/pkg/d.py", "_jitcache/e.py",
                "__pycache__/f.py", "sub/__pycache__/g.py"):
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text(f"# {rel}\n")
    saved = jit.PACKAGE
    try:
        jit.PACKAGE = package
        covered = sorted(p.as_posix() for p in jit._modules())
        before = jit.package_stamp.__wrapped__()
        (package / "_kernels" / "build.py").write_text("# changed\n")
        (package / "__pycache__" / "f.py").write_text("# changed\n")
        assert jit.package_stamp.__wrapped__() == before
        (package / "_kernels" / "pkg" / "d.py").write_text("# changed\n")
        assert jit.package_stamp.__wrapped__() != before
    finally:
        jit.PACKAGE = saved
    assert covered == ["__init__.py", "_kernels/pkg/__init__.py", "_kernels/pkg/d.py", "a.py", "sub/__init__.py",
                       "sub/b.py", "sub/deep/__init__.py", "sub/deep/c.py"]


def test_every_compiled_function_goes_through_msa_jit() -> None:
    """Every Numba function of msa is decorated by msa.jit.njit, so every one is shipped."""
    pattern = re.compile(r"numba\.njit|from numba import .*\bnjit\b|numba\.jit\b|from numba import .*\bjit\b")
    offenders = [
        str(p.relative_to(jit.PACKAGE))
        for p in jit.PACKAGE.rglob("*.py")
        if p.name != "jit.py" and pattern.search(p.read_text())
    ]
    assert offenders == []
    uses = [p for p in jit.PACKAGE.rglob("*.py") if "@njit(cache=True" in p.read_text()]
    assert len(uses) >= 10 and all("from msa.jit import njit" in p.read_text() for p in uses)


MODULE = '''
from msa.jit import njit


@njit(cache=True)
def double(x):
    return 2 * x
'''

#: Imports a module of a stand-in package (msa.jit pointed at it), calls its function, and prints
#: what Numba compiled.
STANDIN = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from numba.core import event

    compiled = []

    class Count(event.Listener):
        def on_start(self, ev):
            pass

        def on_end(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)

    event.register("numba:compile", Count())
    from numba.core.runtime import nrtdynmod

    create_nrt_module = nrtdynmod.create_nrt_module

    def counted(ctx):  # Numba's runtime compiled by LLVM in this process
        compiled.append("NRT")
        return create_nrt_module(ctx)

    nrtdynmod.create_nrt_module = counted
    from msa import jit

    jit.PACKAGE = Path(sys.argv[1]).resolve()
    jit.SHIPPED = jit.PACKAGE / "_jitcache"
    sys.path.insert(0, str(jit.PACKAGE))
    import standin

    assert standin.double(21) == 42
    print(json.dumps(compiled))
    """
)


def test_shipped_entries_load_and_go_stale(tmp_path: Path) -> None:
    """Built into the shipped folder, an entry loads without compiling and without writing
    anything, and so does Numba's runtime (NRT); any change to the package's source makes the
    entry stale, and the function compiles into Numba's own cache instead (never into the
    shipped folder), while the runtime, which does not depend on msa's source, still loads."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "standin.py").write_text(MODULE)
    env = _clean_env(tmp_path)
    env["PYTHONPATH"] = str(REPO)

    def run(build: bool) -> list[str]:
        run_env = {**env, jit.BUILD_ENV: str(package / "_jitcache")} if build else env
        done = subprocess.run([sys.executable, "-c", STANDIN, str(package)], cwd=tmp_path, env=run_env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    assert run(build=True) == ["NRT", "double"]
    shipped = sorted(p.name for p in (package / "_jitcache").iterdir())
    assert [n for n in shipped if n.endswith(".nbi")] == ["standin.double-5.py%d%d.nbi" % sys.version_info[:2]]
    assert len([n for n in shipped if n.startswith("nrt-") and n.endswith(".pkl")]) == 1
    assert run(build=False) == []
    assert not any((tmp_path / "numba-cache").rglob("*.nbi"))

    (package / "other.py").write_text("# any change to the package's source\n")
    assert run(build=False) == ["double"]
    assert sorted(p.name for p in (package / "_jitcache").iterdir()) == shipped
    assert any((tmp_path / "numba-cache").rglob("*.nbi"))
    assert run(build=False) == []  # Numba's own cache answers the second time


#: The stand-in package's function preloaded (msa.jit.preload) before any call: prints how many
#: entries loaded, the signatures then held, and what Numba compiled before and after the call.
PRELOAD = STANDIN.replace(
    "assert standin.double(21) == 42\nprint(json.dumps(compiled))\n",
    "loaded = jit.preload([standin.double])\n"
    "before = list(compiled)\n"
    "assert standin.double(21) == 42\n"
    "print(json.dumps([loaded, len(standin.double.signatures), before, compiled]))\n",
)


def test_preload_loads_shipped_entries_and_compiles_nothing(tmp_path: Path) -> None:
    """msa.jit.preload loads a function's shipped entries without calling it, so that
    its first call finds them loaded; where the entries are stale (the package's source changed)
    it loads and compiles nothing, and the call compiles as before."""
    assert PRELOAD != STANDIN
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "standin.py").write_text(MODULE)
    env = _clean_env(tmp_path)
    env["PYTHONPATH"] = str(REPO)

    def run(script: str, build: bool = False) -> list:
        run_env = {**env, jit.BUILD_ENV: str(package / "_jitcache")} if build else env
        done = subprocess.run([sys.executable, "-c", script, str(package)], cwd=tmp_path, env=run_env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    assert run(STANDIN, build=True) == ["NRT", "double"]
    assert run(PRELOAD) == [1, 1, [], []]
    (package / "other.py").write_text("# any change to the package's source\n")
    assert run(PRELOAD) == [0, 1, [], ["double"]]


KINDS = '''
import numpy as np
from numba import prange
from msa.jit import njit


@njit(cache=True)
def divide(a, b):
    return a // b


@njit(cache=True, parallel=True)
def doubled(x):
    out = np.empty(len(x), dtype=np.int64)
    for i in prange(len(x)):
        out[i] = 2 * x[i]
    return out, out.sum()


@njit(cache=True)
def containers(n):
    items = [np.int64(0)] * 0
    squares = {}
    for i in range(n):
        items.append(i)
        squares[i] = i * i
    return len(items), squares[n - 1], str(n)
'''

RUN_KINDS = textwrap.dedent(
    """
    import sys, numpy as np, kinds
    out, total = kinds.doubled(np.arange(10))
    try:
        kinds.divide(1, 0)
        raised = "nothing"
    except ZeroDivisionError:
        raised = "ZeroDivisionError"
    registries = any(m in sys.modules for m in ('numba.np.arraymath', 'numba.np.arrayobj'))
    import numba

    @numba.njit
    def caller(a, b):  # compiled now: links the cached divide, whose bitcode was not parsed at load
        return kinds.divide(a, b) + 1

    library = kinds.divide.overloads[kinds.divide.signatures[0]].library
    print(out.tolist(), int(total), kinds.containers(5), raised, caller(7, 2), type(library).__name__,
          registries, sum(kinds.divide.stats.cache_hits.values()))
    """
)


def test_functions_loaded_without_registries_still_run(tmp_path: Path) -> None:
    """msa.jit loads cached entries without Numba's typing and lowering registries, and without
    importing the Numba modules their helpers come from (``numba.np.arrayobj``): parallel
    loops, arrays the function allocates, typed lists and dicts, strings and exceptions raised
    in compiled code all work from a cache as they did when compiled."""
    (tmp_path / "kinds.py").write_text(KINDS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)]),
           "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    runs = [
        subprocess.run([sys.executable, "-c", RUN_KINDS], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600, check=True).stdout.split("] ", 1)[1].strip()
        for _ in range(2)
    ]
    expected = "90 (5, 16, '5') ZeroDivisionError 4"
    assert runs[0].startswith(expected) and runs[1].startswith(expected)
    # from the cache, registries never loaded, symbols read from the object code
    assert runs[1].endswith("ObjectSymbolsLibrary False 1"), runs[1]


def test_object_symbols_cover_the_linking_bitcode() -> None:
    """What a cache load reads from the object's ELF symbol table instead of parsing the bitcode
    (msa.jit._object_symbols) names every symbol the bitcode defines, for functions
    of the kinds msa compiles (parallel and nogil; one that calls others), compiled afresh here
    so that their object code and bitcode are what a cache entry would hold."""
    import numba
    import numpy as np
    from llvmlite import binding as ll

    from msa.seqops import hash_sequences, same_sequences

    residues = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY" * 3, dtype=np.uint8).copy()
    offsets = np.array([0, 20, 40, 60], dtype=np.int64)
    fresh = numba.njit(parallel=True, nogil=True)(hash_sequences.py_func)
    fresh(residues, offsets)
    one = np.array([0], dtype=np.int64)

    @numba.njit
    def calls_others(residues, offsets):  # links two of msa's functions into its own library
        return fresh(residues, offsets).sum() + same_sequences(residues, offsets, one, one + 1).sum()

    calls_others(residues, offsets)
    for dispatcher in (fresh, calls_others):
        _, kind, (obj, bitcode) = next(iter(dispatcher.overloads.values())).library.serialize_using_object_code()
        module = ll.parse_bitcode(bitcode)
        defined = {g.name for gs in (module.functions, module.global_variables) for g in gs if not g.is_declaration}
        symbols = jit.elf_defined_symbols(obj)
        if sys.platform.startswith("linux"):
            assert symbols is not None and defined <= symbols, sorted(defined - (symbols or set()))[:5]
            assert len(defined) > 5
    assert jit.elf_defined_symbols(b"\xcf\xfa\xed\xfe" + bytes(60)) is None  # Mach-O: Numba's own load
