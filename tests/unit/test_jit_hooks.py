"""msa.jit's load hooks: off (MSA_JIT_HOOKS=0), or off by themselves where Numba is not
as they expect, msa gives the same bytes; on, they leave a user's own Numba code alone; and the
Numba pin in pyproject.toml is the range the hooks are tested with.

The runs use this checkout's msa (not an installed one) with Numba's cache in its
``__pycache__`` folders, as a checkout runs; tests/unit/test_jitcache.py tests the shipped cache.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import pytest

from msa import jit
from msa._runtime.precompile import DNA, PROTEIN, family

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "datasets" / "examples" / "example.fa"

#: A user's own module, imported after msa ran: one function cached by Numba, one not.
USER = """
import numba


@numba.njit(cache=True)
def cached(x):
    return x + 1


@numba.njit
def plain(x):
    return x * 2
"""

#: ``python -c RUN MODE ARGV``: runs ``msa ARGV`` in-process, then the user's functions, and
#: prints what msa's and the user's dispatchers used. MODE ``changed``: before msa is imported,
#: an internal the hooks use takes another parameter (a Numba changed under them).
RUN = textwrap.dedent(
    """
    import json, sys
    mode, argv = sys.argv[1], json.loads(sys.argv[2])
    from numba.core import environment, registry
    from numba.core.runtime import nrtdynmod

    if mode == "changed":
        rebuild = environment._rebuild_env
        environment._rebuild_env = lambda modname, consts, env_name, lazy=False: rebuild(modname, consts, env_name)
    originals = (environment._rebuild_env, nrtdynmod.compile_nrt_functions)
    from msa.__main__ import main
    from msa import jit

    sys.argv = ["msa"] + argv
    try:
        main()
    except SystemExit as exc:
        assert not exc.code, exc.code
    import user_functions

    assert (user_functions.cached(3), user_functions.plain(3)) == (4, 6)
    from numba.core.dispatcher import Dispatcher

    ours = [v for name, m in list(sys.modules.items()) if name.split(".")[0] == "msa"
            for v in vars(m).values() if isinstance(v, Dispatcher)]
    users = [user_functions.cached, user_functions.plain]

    def libraries(dispatchers):
        return sorted({type(o.library).__name__ for d in dispatchers for o in d.overloads.values()})

    codegen = registry.cpu_target.target_context.codegen()
    print(json.dumps({
        "hooks_off": jit.hooks_off(),
        "msa_caches": sorted({type(d._cache).__name__ for d in ours}),
        "msa_libraries": libraries(ours),
        "user_libraries": libraries(users),
        "user_cache": type(user_functions.cached._cache).__name__,
        "user_hits": sum(user_functions.cached.stats.cache_hits.values()),
        "restored": "_library_class" not in vars(codegen)
                    and (environment._rebuild_env, nrtdynmod.compile_nrt_functions) == originals,
    }))
    """
)


def _run(mode: str, argv: list[str], tmp_path: Path) -> dict:
    """``msa argv`` with the hooks on (``on``), off (``off``: MSA_JIT_HOOKS=0) or facing a
    changed Numba (``changed``); its report."""
    (tmp_path / "user_functions.py").write_text(USER)
    env = {k: v for k, v in os.environ.items() if k not in (jit.HOOKS_ENV, jit.BUILD_ENV, "NUMBA_CACHE_DIR")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(tmp_path)])
    if mode == "off":
        env[jit.HOOKS_ENV] = "0"
    done = subprocess.run([sys.executable, "-c", RUN, mode, json.dumps(argv)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _outputs(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """msa's argv for each input, ``{out}`` where its output folder goes: the bundled example,
    a DNA family, and several files aligned with ``-O``."""
    folder = tmp_path_factory.mktemp("inputs")
    dna = folder / "dna.fa"
    dna.write_text("".join(f">{n}\n{s}\n" for n, s in family(5, 80, 120, DNA)))
    protein = folder / "protein.fa"
    protein.write_text("".join(f">p{n}\n{s}\n" for n, s in family(6, 30, 150, PROTEIN)))
    return {
        "example": ["align", str(EXAMPLE), "-o", "{out}/example.fa", "--tree-out", "{out}/example.nwk"],
        "dna": ["align", str(dna), "-o", "{out}/dna.fa"],
        "many": ["align", str(EXAMPLE), str(dna), str(protein), "-O", "{out}/many"],
    }


@pytest.mark.parametrize("name", ["example", "dna", "many"])
def test_the_same_bytes_with_the_hooks_off(name: str, inputs: dict[str, list[str]], tmp_path: Path) -> None:
    """MSA_JIT_HOOKS=0: msa's functions are plain numba.njit(cache=True) (Numba's cache, its
    libraries, nothing of Numba replaced) and give the bytes they give with the hooks on,
    which load the same cache entries their own way."""
    outputs, reports = {}, {}
    for mode in ("on", "off", "on"):  # the first run may compile; the others load
        out = tmp_path / f"{mode}-{len(outputs)}"
        out.mkdir()
        reports[mode] = _run(mode, [a.replace("{out}", str(out)) for a in inputs[name]], tmp_path)
        outputs[out.name] = _outputs(out)
    first, *others = outputs.values()
    assert first and all(o == first for o in others)
    assert reports["off"]["hooks_off"] == f"{jit.HOOKS_ENV}=0"
    assert reports["off"]["msa_caches"] == ["FunctionCache"]
    assert reports["off"]["msa_libraries"] == ["JITCodeLibrary"]
    assert reports["on"]["hooks_off"] is None and reports["on"]["msa_caches"] == ["_LazyCache"]
    assert "ObjectSymbolsLibrary" in reports["on"]["msa_libraries"]  # loaded the hooks' way
    assert reports["off"]["restored"] and reports["on"]["restored"]


def test_a_users_njit_code_is_numbas_own(inputs: dict[str, list[str]], tmp_path: Path) -> None:
    """After msa loaded its functions the hooks' way, a user's own functions, compiled or loaded
    from Numba's cache, get Numba's own library class and cache; every swap was undone."""
    reports = []
    for run in range(2):  # the user's cached function compiles, then loads
        out = tmp_path / f"out{run}"
        out.mkdir()
        reports.append(_run("on", [a.replace("{out}", str(out)) for a in inputs["example"]], tmp_path))
    for report in reports:
        assert "ObjectSymbolsLibrary" in reports[-1]["msa_libraries"]
        assert report["user_libraries"] == ["JITCodeLibrary"]
        assert report["user_cache"] == "FunctionCache"
        assert report["restored"]
    assert reports[-1]["user_hits"] == 1


def test_a_changed_numba_falls_back(inputs: dict[str, list[str]], tmp_path: Path) -> None:
    """An internal the hooks call with other parameters than it takes (as a new Numba might):
    msa finds it before using any, runs as plain numba.njit(cache=True), and gives the same bytes."""
    outputs, reports = [], []
    for mode in ("on", "changed"):
        out = tmp_path / mode
        out.mkdir()
        reports.append(_run(mode, [a.replace("{out}", str(out)) for a in inputs["example"]], tmp_path))
        outputs.append(_outputs(out))
    assert outputs[0] and outputs[0] == outputs[1]
    changed = reports[1]
    assert changed["hooks_off"] == (
        "numba.core.environment:_rebuild_env takes (modname consts env_name lazy), not (modname consts env_name)"
    )
    assert changed["msa_caches"] == ["FunctionCache"] and changed["msa_libraries"] == ["JITCodeLibrary"]


def test_the_hooks_check_what_they_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each way a Numba may differ turns the hooks off, with the reason: an untested version,
    a missing internal, other parameters, a Numba function that no longer reads what the hooks
    set; MSA_JIT_HOOKS=0 too. Building the wheel, an off hook is an error."""
    from numba.core import caching, dispatcher, environment

    assert jit._hooks_problem() is None
    with monkeypatch.context() as m:
        m.setenv(jit.HOOKS_ENV, "0")
        assert jit._hooks_problem() == f"{jit.HOOKS_ENV}=0"
        m.setenv(jit.BUILD_ENV, "/nonexistent")
        with pytest.raises(RuntimeError, match="HATCH_BUILD_NO_HOOKS"):
            jit.hooks_off.__wrapped__()
    with monkeypatch.context() as m:
        low, high = jit.NUMBA_TESTED
        m.setattr(numba, "__version__", f"{high}.0")
        assert jit._hooks_problem() == f"Numba {high}.0 is not in the tested range {low} to {high}"
    with monkeypatch.context() as m:
        m.delattr(caching.IndexDataCacheFile, "load")
        assert jit._hooks_problem() == "numba.core.caching:IndexDataCacheFile.load is missing"
    with monkeypatch.context() as m:
        m.setattr(environment, "lookup_environment", lambda name: None)
        assert jit._hooks_problem() == "numba.core.environment:lookup_environment takes (name), not (env_name)"
    with monkeypatch.context() as m:
        m.setattr(dispatcher.Dispatcher, "compile", lambda self, sig: None)
        assert jit._hooks_problem() == (
            "numba.core.dispatcher:Dispatcher.compile does not read _cache, load_overload, save_overload"
        )
    assert jit._hooks_problem() is None


def test_numba_is_pinned_to_the_tested_range() -> None:
    """pyproject.toml's Numba requirement ([project] and the wheel build's) is NUMBA_TESTED, and
    the installed Numba is in it: a new Numba needs the pin and NUMBA_TESTED raised together."""
    text = (REPO / "pyproject.toml").read_text()
    low, high = jit.NUMBA_TESTED
    assert re.findall(r'"numba([^"]*)"', text) == [f">={low},<{high}"] * 2
    assert jit.numba_tested(numba.__version__), f"Numba {numba.__version__} is outside {jit.NUMBA_TESTED}"
    assert [jit.numba_tested(v) for v in (f"{low}.0", f"{low}.1", f"{high}.0", f"{high}.0rc1", "0.57.1")] == [
        True, True, False, False, False,
    ]
