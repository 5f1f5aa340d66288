"""msa's import graph: no circle, no start-up machinery among the top-level modules, and no
function-local import of an msa module without its reason on the line.

Every module of msa/ is parsed (not imported), and each ``import`` statement
counts, at module level or inside a function (a function-local import only
hides a circle until that function runs). Relative imports are resolved, and
``from msa.x import y`` where ``y`` is a submodule counts as importing
``msa.x.y``. The one edge left out: a package's ``__init__`` importing its own
submodules (``msa.run`` -> ``msa.run.local``), which is how a package gathers
its public names; a submodule importing its package back still counts, so a
circle through an ``__init__`` is still found.
"""
from __future__ import annotations

import ast
from pathlib import Path

MSA = Path(__file__).resolve().parents[2] / "msa"
#: The machinery that starts a command (the backend's start, forked reading, the bytecode cache)
#: and the wheel's precompile step: it lives in msa/_runtime/, above the pipeline. What the
#: pipeline itself uses (the compiled-code loader msa/jit.py, the interrupt checkpoints
#: msa/interrupts.py) sits below it, at the top level; which backend a run starts is planned
#: with the run (msa/run/plan.py).
RUNTIME = ("precompile", "_precompile", "startup", "forked", "bytecode", "cuda_start")


def _modules() -> dict[str, Path]:
    found = {}
    for path in MSA.rglob("*.py"):
        parts = path.relative_to(MSA.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The msa modules ``name`` imports anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                where = ".".join(base + ([node.module] if node.module else []))
            else:
                where = node.module or ""
            targets.add(where)
            targets.update(f"{where}.{alias.name}" for alias in node.names)
    edges = set()
    for target in targets:
        while target and target not in modules:  # ``import msa.x.y``'s attribute: its module
            target = target.rpartition(".")[0]
        if target and target != name and not (path.name == "__init__.py" and target.startswith(name + ".")):
            edges.add(target)
    return edges


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of ``graph`` (its modules in order, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_graph_sees_function_level_and_submodule_imports() -> None:
    graph = _graph()
    assert "msa.pipeline" in graph["msa.run.local"]  # imported inside functions only
    assert "msa.run.local" in graph["msa.run.dask"]  # ``from msa.run.local import align_file``
    assert "msa.run.local" not in graph["msa.run"]  # a package gathering its own submodules' names
    assert "msa.run.local" in graph["msa.run.single"]


def test_cycle_finder_finds_a_circle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_circle() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_no_top_level_module_is_start_up_machinery() -> None:
    top = {path.stem for path in MSA.glob("*.py")} | {p.name for p in MSA.iterdir() if (p / "__init__.py").exists()}
    assert not top & set(RUNTIME), sorted(top & set(RUNTIME))
    assert all((MSA / "_runtime" / f"{name}.py").exists() for name in ("precompile", "startup"))
    assert all((MSA / f"{name}.py").exists() for name in ("jit", "interrupts"))


def test_the_layers() -> None:
    """Nothing below the run layer imports start-up machinery, and nothing imports the
    command's entry (msa.__main__: the CLI once did, for ``--version``'s line)."""
    graph = _graph()
    above = ("msa._runtime", "msa.run", "msa.cli", "msa.__main__", "msa.api")
    for name, targets in graph.items():
        if not name.startswith(above):
            assert not {t for t in targets if t.startswith(("msa._runtime", "msa.__main__"))}, name
    assert not any("msa.__main__" in targets for targets in graph.values())


#: What a function-local import of an msa module carries on its line: why it is not at the top
#: (an import circle, an optional or heavy dependency, a lazily imported leg of the start-up that
#: docs/start-up.md measures, or a different process).
LOCAL_REASON = "# local: "


def _local_msa_imports(path: Path) -> list[tuple[int, str]]:
    """The function-local imports of msa modules in ``path`` (absolute or relative): line and text."""
    text = path.read_text()
    lines = text.splitlines()
    found = []
    for func in ast.walk(ast.parse(text, str(path))):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        for node in ast.walk(func):
            if isinstance(node, ast.Import):
                ours = any(alias.name.split(".")[0] == "msa" for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                ours = bool(node.level) or (node.module or "").split(".")[0] == "msa"
            else:
                continue
            if ours:
                found.append((node.lineno, lines[node.lineno - 1]))
    return sorted(set(found))


def test_the_local_import_finder(tmp_path: Path) -> None:
    path = tmp_path / "probe.py"
    path.write_text("import msa\n\ndef f():\n    from msa.io import x\n    from . import y  # local: (a) z\n    import numpy\n")
    assert _local_msa_imports(path) == [(4, "    from msa.io import x"), (5, "    from . import y  # local: (a) z")]


def test_every_local_import_says_why() -> None:
    """A function-local import of an msa module is at the top of its module, or says on its line
    why not (``# local: ...``): the start-up is what docs/start-up.md measures, not imports put
    off by habit."""
    bare = [
        f"{path.relative_to(MSA.parent)}:{line}: {text.strip()}"
        for path in sorted(MSA.rglob("*.py"))
        for line, text in _local_msa_imports(path) if LOCAL_REASON not in text
    ]
    assert not bare, "\n".join(bare)
