"""Numba's ``njit`` for msa, reading first the compiled code shipped inside the package.

Every compiled function of msa is decorated with :func:`njit` from here, with
``cache=True`` as with ``numba.njit``. The wheel build (``hatch_build.py``)
runs :mod:`msa._runtime.precompile`, which compiles every function for the types the
pipeline calls it with and writes Numba's cache files into the package as
``msa/_jitcache/``. At run time each function looks there first; anything not
found there (another Numba version, another CPU, a type the build did not run)
goes to Numba's own cache as ``numba.njit(cache=True)`` does: compiled on
first use and saved in ``__pycache__`` beside the module or in Numba's user
cache directory. ``msa/_jitcache`` itself is only read, so a read-only install
still uses it, and what was shipped stays as shipped.

An entry of ``_jitcache`` is valid for the package's exact source (one hash of
every ``.py`` file of the package, so a change in a called function in another
module invalidates its callers too), the Numba version, NumPy's major.minor
version, the Python version and the CPU (Numba keys its entries on the CPU name
and features). A checkout or
an editable install has no ``_jitcache``: there every entry is Numba's own cache's.

Loading a cached entry, msa skips work Numba does in every process (see
:meth:`_LazyCache.load_overload`). This uses Numba internals (:data:`_INTERNALS`), so the
hooks are on only where all of them are as expected, for the Numba versions CI tests
(:data:`NUMBA_TESTED`, the pin in pyproject.toml), and unless ``MSA_JIT_HOOKS=0``;
otherwise :func:`njit` is ``numba.njit`` and nothing of Numba is touched. Whatever the
hooks replace is replaced only while msa's own dispatcher loads an entry, holding Numba's
compiler lock, and restored after: a user's own ``numba.njit`` code never sees them. What
stays is what any load leaves: Numba's runtime, initialised once a process (from the shipped
machine code of its module), and the loaded functions' environments.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import inspect
import os
import pickle
import re
import sys
import threading
from pathlib import Path, PurePath
from typing import Any, Callable, Iterable, Iterator

import numba

#: The package folder, and the compiled code shipped in it by the wheel build.
PACKAGE = Path(__file__).resolve().parent
SHIPPED = PACKAGE / "_jitcache"
#: Set by the wheel build only (msa._runtime.precompile): compile into this folder, ignoring every
#: other cache, so that each function used is compiled and saved there.
BUILD_ENV = "MSA_JITCACHE_BUILD_DIR"


#: The Numba versions the hooks are tested with (CI): from the first up to, not including, the
#: second. pyproject.toml pins Numba to the same range (tests/unit/test_jit_hooks.py checks
#: both); raise it only once CI has run the new Numba.
NUMBA_TESTED = ("0.58", "0.69")
#: ``MSA_JIT_HOOKS=0`` turns the hooks off: :func:`njit` is ``numba.njit``, shipped code unread.
HOOKS_ENV = "MSA_JIT_HOOKS"

#: What the hooks use of Numba and llvmlite: ``module:name`` and the parameters the hooks pass
#: (None: an attribute only). Anything missing, or called with other parameters, in the
#: installed Numba turns the hooks off (:func:`hooks_off`), checked before any is used.
_INTERNALS: dict[str, str | None] = {
    # The shipped-first cache (ShippedFirstCache) set as the dispatcher's ``_cache``.
    "numba.core.caching:FunctionCache.__init__": "py_func",
    "numba.core.caching:FunctionCache.load_overload": "sig target_context",
    "numba.core.caching:FunctionCache._load_overload": "sig target_context",
    "numba.core.caching:FunctionCache._save_overload": "sig data",
    "numba.core.caching:FunctionCache._index_key": "sig codegen",
    "numba.core.caching:FunctionCache._guard_against_spurious_io_errors": "",
    "numba.core.caching:CompileResultCacheImpl.rebuild": "target_context payload",
    "numba.core.caching:CompileResultCacheImpl.reduce": "cres",
    "numba.core.caching:CompileResultCacheImpl.check_cachable": "cres",
    "numba.core.caching:CompileResultCacheImpl.filename_base": None,
    "numba.core.caching:IndexDataCacheFile.__init__": "cache_path filename_base source_stamp",
    "numba.core.caching:IndexDataCacheFile.load": "key",
    "numba.core.caching:IndexDataCacheFile._load_index": "",
    "numba.core.caching:IndexDataCacheFile.save": "key data",
    "numba.core.compiler_lock:global_compiler_lock": None,
    # Entries loaded without parsing their bitcode (_object_symbols).
    "numba.core.codegen:JITCPUCodegen._library_class": None,
    "numba.core.codegen:JITCPUCodegen.create_library": "name **kwargs",
    "numba.core.codegen:JITCPUCodegen.unserialize_library": "serialized",
    "numba.core.codegen:JITCPUCodegen.magic_tuple": "",
    "numba.core.codegen:JITCodeLibrary._unserialize": "codegen state",
    "numba.core.codegen:JITCodeLibrary.enable_object_caching": "",
    "numba.core.codegen:JITCodeLibrary._set_compiled_object": "value",
    "numba.core.codegen:JITCodeLibrary._finalize_final_module": "",
    "numba.core.codegen:JITCodeLibrary._get_module_for_linking": "",
    "llvmlite.binding:parse_bitcode": "bitcode context",
    # Environments rebuilt without imports (_environments_without_imports).
    "numba.core.environment:_rebuild_env": "modname consts env_name",
    "numba.core.environment:lookup_environment": "env_name",
    "numba.core.environment:Environment._memo": None,
    # Numba's runtime from shipped machine code (_initialize_runtime).
    "numba.core.runtime:rtsys.initialize": "ctx",
    "numba.core.runtime:rtsys._init": None,
    "numba.core.runtime.nrtdynmod:compile_nrt_functions": "ctx",
    "numba.core.runtime.nrtdynmod:create_nrt_module": "ctx",
    "numba.core.codegen:JITCodeLibrary.add_ir_module": "ir_module",
    "numba.core.codegen:JITCodeLibrary.finalize": "",
    "numba.core.codegen:JITCodeLibrary.serialize_using_object_code": "",
    "numba.core.config:DEBUG_NRT": None,
}
#: Names these Numba functions must read for what the hooks set to take effect: the dispatcher
#: loads and saves through ``_cache``; a codegen unserializes through ``_library_class``; a
#: library links the bitcode ``_shared_module`` holds.
_READS = {
    "numba.core.dispatcher:Dispatcher.compile": ("_cache", "load_overload", "save_overload"),
    "numba.core.codegen:JITCPUCodegen.unserialize_library": ("_library_class", "_unserialize"),
    "numba.core.codegen:JITCodeLibrary._get_module_for_linking": ("_shared_module",),
}


def njit(**options: Any) -> Callable[[Callable], Any]:
    """``numba.njit(**options)``; with ``cache=True`` and the hooks on, the shipped cache is
    read first and cached entries load msa's way."""

    def wrap(fn: Callable) -> Any:
        if not options.get("cache") or hooks_off() is not None:
            return numba.njit(**options)(fn)
        dispatcher = numba.njit(**{k: v for k, v in options.items() if k != "cache"})(fn)
        dispatcher._cache = _LazyCache(dispatcher.py_func)  # what enable_caching sets, made lazily
        return dispatcher

    return wrap


@functools.cache
def hooks_off() -> str | None:
    """Why the hooks are off in this process (None: they are on). The wheel build compiles
    through them, so there a reason is an error."""
    reason = _hooks_problem()
    if reason is not None and _build_dir() is not None:
        raise RuntimeError(f"msa's wheel build compiles through msa.jit's hooks, which are off: {reason} "
                           "(HATCH_BUILD_NO_HOOKS=true builds a wheel without compiled code)")
    return reason


def _hooks_problem() -> str | None:
    if os.environ.get(HOOKS_ENV, "").strip().lower() in ("0", "false", "no", "off"):
        return f"{HOOKS_ENV}={os.environ[HOOKS_ENV]}"
    if not numba_tested(numba.__version__):
        return f"Numba {numba.__version__} is not in the tested range {NUMBA_TESTED[0]} to {NUMBA_TESTED[1]}"
    for name, params in _INTERNALS.items():
        value = _internal(name)
        if value is None:
            return f"{name} is missing"
        if params is not None and _parameters(value) != params:
            return f"{name} takes ({_parameters(value)}), not ({params})"
    for name, reads in _READS.items():
        code = getattr(_internal(name), "__code__", None)
        if code is None or not set(reads) <= set(code.co_names):
            return f"{name} does not read {', '.join(reads)}"
    return None


def numba_tested(version: str) -> bool:
    """Whether Numba ``version`` is in :data:`NUMBA_TESTED` (by major.minor)."""
    low, high = (_major_minor(v) for v in NUMBA_TESTED)
    return low <= _major_minor(version) < high


def _major_minor(version: str) -> tuple[int, int]:
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2])) if match else (0, 0)


def _internal(name: str) -> Any:
    """``module:dotted.name``'s object, or None where the module or a name is missing."""
    module, _, path = name.partition(":")
    try:
        value: Any = importlib.import_module(module)
    except ImportError:
        return None
    for part in path.split("."):
        value = getattr(value, part, _MISSING)
        if value is _MISSING:
            return None
    return value


_MISSING = object()


def _parameters(fn: Any) -> str | None:
    """``fn``'s parameters as the hooks pass them (``self`` and ``cls`` left out)."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    return " ".join(kinds.get(p.kind, "") + p.name for p in parameters if p.name not in ("self", "cls"))


class _LazyCache:
    """A function's cache, made when the function is first compiled or loaded.

    Making one tests its folder by writing a temporary file there (Numba's
    ``ensure_cache_path``): 5-7 ms a function on the device machines' file
    system, 0.5 s for msa's 70 functions at import, where a run calls a handful.
    """

    def __init__(self, py_func: Callable) -> None:
        self._py_func = py_func
        self._cache: Any = None

    def _made(self) -> Any:
        if self._cache is None:
            self._cache = _make_cache(self._py_func)
        return self._cache

    def __getattr__(self, name: str) -> Any:
        return getattr(self._made(), name)

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        """Numba's ``load_overload`` without its refresh of every typing and lowering registry
        first (0.3-0.5 s, paid by the first cached function of a run). A cached entry is
        linked machine code: it needs Numba's runtime (``rtsys``), which is initialised here,
        and none of the registries; compiling a miss refreshes them itself. Numba's compiler
        lock (reentrant; the dispatcher holds it already) is held throughout, so no other
        compile or load, of msa's or a user's, runs while the swaps below are in place."""
        from numba.core.compiler_lock import global_compiler_lock
        from numba.core.runtime import rtsys

        cache = self._made()
        with global_compiler_lock:
            _initialize_runtime(rtsys, target_context)
            with cache._guard_against_spurious_io_errors(), _environments_without_imports(), \
                    _object_symbols(target_context.codegen()):
                loaded = cache._load_overload(sig, target_context)
        if loaded is None and getattr(_preloading, "on", False):
            raise _NotShipped  # preload(): leave the miss to the call, which compiles it
        return loaded

    def shipped_signatures(self, codegen: Any) -> list[Any]:
        """The argument types of every entry shipped for this function that this process can
        load (its index's keys for this CPU and this bytecode)."""
        cache = self._made()
        shipped = getattr(cache, "_shipped", None)
        if shipped is None:
            return []
        with cache._guard_against_spurious_io_errors():
            keys = list(shipped._load_index())
        return [key[0] for key in keys if key == cache._index_key(key[0], codegen)]


#: Set on a thread while :func:`preload` runs there: a shipped entry that does not load raises.
_preloading = threading.local()


class _NotShipped(Exception):
    """An entry :func:`preload` asked for did not load from the shipped cache."""


def preload(functions: Iterable[Any], stop: threading.Event | None = None) -> int:
    """Load every shipped entry of ``functions`` (msa's njit dispatchers) as their first calls
    would, without calling them, until ``stop`` is set; returns how many were loaded. A run's
    background thread loads the stages ahead while the main thread reads and builds the tree
    (a load is 1-10 ms of mostly linking, which releases the GIL, and a small run makes ~20).
    Nothing is compiled here: an entry that does not load is left to its call. Where the
    hooks are off nothing is shipped to read, and nothing is done."""
    if hooks_off() is not None or _build_dir() is not None:  # the wheel's build compiles what it loads
        return 0
    loaded = 0
    _preloading.on = True
    try:
        for dispatcher in functions:
            cache = getattr(dispatcher, "_cache", None)
            if not isinstance(cache, _LazyCache):
                continue
            for sig in cache.shipped_signatures(dispatcher.targetctx.codegen()):
                if stop is not None and stop.is_set():
                    return loaded
                try:
                    dispatcher.compile(sig)
                    loaded += 1
                except Exception:  # _NotShipped, or an entry Numba could not rebuild: left to the call
                    continue
    finally:
        _preloading.on = False
    return loaded


@contextlib.contextmanager
def _replaced(owner: Any, name: str, value: Any) -> Iterator[None]:
    """``owner.name`` is ``value`` inside the block, as it was after (an attribute the object
    did not hold itself is removed again, so its class's shows through)."""
    own = vars(owner).get(name, _MISSING)
    setattr(owner, name, value)
    try:
        yield
    finally:
        if own is _MISSING:
            delattr(owner, name)
        else:
            setattr(owner, name, own)


@contextlib.contextmanager
def _environments_without_imports() -> Iterator[None]:
    """Cache entries loaded without importing the Numba modules their inlined helpers come from.

    An entry's environments (one per compiled function, its helpers' included) are pickled as
    (module name, constants) and rebuilt by importing the module, for its globals: loading the
    example's entries imported ``numba.np.arrayobj`` and, through it, Numba's string, hashing
    and random implementations (10-12 ms on a 2-core machine, 39 ms on a 16-core GPU host;
    docs/compiled-code.md). Only object-mode code reads an environment's
    globals; msa compiles nopython code only, and Numba's own implementation modules hold
    nothing else. So an environment of a ``numba.*`` module that is not imported yet gets a
    globals dict naming the module (what caching it again needs) instead of the module's own."""
    from numba.core import environment

    rebuild, lookup, env_class = environment._rebuild_env, environment.lookup_environment, environment.Environment

    def rebuild_lazily(modname: str, consts: list, env_name: str) -> Any:
        if not isinstance(modname, str) or modname in sys.modules or not modname.startswith("numba."):
            return rebuild(modname, consts, env_name)
        env = lookup(env_name)
        if env is None:
            env = env_class({"__name__": modname})
            env.consts[:] = consts
            env.env_name = env_name
            env_class._memo[env_name] = env
        return env

    with _replaced(environment, "_rebuild_env", rebuild_lazily):
        yield


def _initialize_runtime(rtsys: Any, target_context: Any) -> None:
    """Numba's runtime (NRT) initialised with its LLVM module loaded as machine code where the
    wheel shipped it, instead of compiled by LLVM as Numba does in every process (16 ms on a
    2-core machine, 38 ms on a 16-core GPU host; docs/compiled-code.md). Building
    (msa._runtime.precompile), the module is compiled with object caching and saved for the wheel.
    Numba's own way where the runtime is initialised already, its debug build is asked for
    (NUMBA_DEBUG_NRT) or nothing is shipped."""
    from numba.core.runtime import nrtdynmod

    if rtsys._init:  # every load calls this: only the first goes on
        return
    path = _runtime_file(_build_dir() or SHIPPED, target_context.codegen())
    if numba.core.config.DEBUG_NRT or (_build_dir() is None and not path.is_file()):
        rtsys.initialize(target_context)
        return

    def shipped(ctx: Any) -> Any:
        return ctx.codegen().unserialize_library(pickle.loads(path.read_bytes()))

    def build_and_save(ctx: Any) -> Any:
        module, library = nrtdynmod.create_nrt_module(ctx)
        library.enable_object_caching()
        library.add_ir_module(module)
        library.finalize()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_bytes(pickle.dumps(library.serialize_using_object_code()))
        os.replace(tmp, path)  # build processes may race: each writes the same bytes whole
        return library

    with _replaced(nrtdynmod, "compile_nrt_functions", shipped if _build_dir() is None else build_and_save):
        rtsys.initialize(target_context)


def _runtime_file(folder: Path, codegen: Any) -> Path:
    """Where ``folder`` keeps the runtime's machine code for this Numba, llvmlite and CPU."""
    import llvmlite

    key = repr((numba.__version__, llvmlite.__version__, codegen.magic_tuple()))
    return folder / f"nrt-{hashlib.sha256(key.encode()).hexdigest()[:16]}.pkl"


@contextlib.contextmanager
def _object_symbols(codegen: Any) -> Iterator[None]:
    """Inside the block ``codegen`` loads cache entries without parsing their linking bitcode.

    A cache entry holds a function's object code and the bitcode other functions link against
    when they are compiled. Numba parses that bitcode on every load and walks it to learn the
    symbols the object defines: 0.07 s of the example's 0.56 s on a 2-core machine
    (docs/compiled-code.md). A run that only loads needs neither: the symbols are read
    from the object's ELF symbol table (a superset of the bitcode's: checked for every entry
    in tests/unit/test_jitcache.py) and the bitcode is parsed the first time a compile links
    the function. Objects that are not 64-bit little-endian ELF load as Numba loads them.
    The codegen's library class is swapped for the block only: libraries made outside it
    (any compile, a user's loads) are Numba's own.
    """
    from numba.core.codegen import JITCodeLibrary

    base = getattr(codegen, "_library_class", None)
    engine = getattr(codegen, "_engine", None)
    if not (isinstance(base, type) and issubclass(base, JITCodeLibrary)
            and isinstance(getattr(engine, "_defined_symbols", None), set)):
        yield  # not the CPU codegen Numba has now: its own way
        return
    with _replaced(codegen, "_library_class", _object_symbols_library(base)):
        yield


@functools.cache
def _object_symbols_library(base: type) -> type:
    """``base`` (Numba's JIT library class), loading entries by their object's symbols."""
    from llvmlite import binding as ll

    class ObjectSymbolsLibrary(base):  # type: ignore[misc, valid-type]
        """A JIT library whose cached bitcode is parsed when a compile first links it."""

        _linking_bitcode: bytes | None = None

        @classmethod
        def _unserialize(cls, codegen: Any, state: Any) -> Any:
            name, kind, data = state
            symbols = elf_defined_symbols(data[0]) if kind == "object" else None
            if symbols is None:
                return super()._unserialize(codegen, state)
            library = codegen.create_library(name)
            library.enable_object_caching()
            library._set_compiled_object(data[0])
            library._linking_bitcode = data[1]
            library._finalize_final_module()
            codegen._engine._defined_symbols |= symbols
            return library

        def _get_module_for_linking(self) -> Any:
            if self._shared_module is None and self._linking_bitcode is not None:
                self._shared_module = ll.parse_bitcode(self._linking_bitcode)
                self._linking_bitcode = None
            return super()._get_module_for_linking()

    return ObjectSymbolsLibrary


#: ELF64 section header and symbol table entry (little-endian), as the System V ABI lays them out.
_ELF_SECTION = [("name", "<u4"), ("type", "<u4"), ("flags", "<u8"), ("addr", "<u8"), ("offset", "<u8"),
                ("size", "<u8"), ("link", "<u4"), ("info", "<u4"), ("align", "<u8"), ("entsize", "<u8")]
_ELF_SYMBOL = [("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"), ("value", "<u8"), ("size", "<u8")]
#: Symbol types that name code or data (STT_NOTYPE, OBJECT, FUNC, COMMON, TLS); not SECTION or FILE.
_ELF_NAMED_TYPES = (0, 1, 2, 5, 6)


def elf_defined_symbols(obj: bytes) -> set[str] | None:
    """The names an ELF64 little-endian relocatable object defines (None for any other object)."""
    import numpy as np

    if obj[:6] != b"\x7fELF\x02\x01":
        return None
    sections = np.frombuffer(
        obj, np.dtype(_ELF_SECTION), count=int.from_bytes(obj[0x3C:0x3E], "little"),
        offset=int.from_bytes(obj[0x28:0x30], "little"),
    )
    tables = np.flatnonzero(sections["type"] == 2)  # SHT_SYMTAB
    if len(tables) != 1:
        return None
    table = sections[tables[0]]
    strings = sections[table["link"]]
    symbols = np.frombuffer(obj, np.dtype(_ELF_SYMBOL), count=int(table["size"]) // 24, offset=int(table["offset"]))
    named = np.isin(symbols["info"] & 0xF, _ELF_NAMED_TYPES) & (symbols["shndx"] != 0) & (symbols["name"] != 0)
    text = obj[int(strings["offset"]): int(strings["offset"] + strings["size"])]
    return {text[i: text.index(b"\0", i)].decode() for i in symbols["name"][named].tolist()}


def _make_cache(py_func: Callable) -> Any:
    """The shipped-first cache, or Numba's own where nothing is shipped."""
    folder = _shipped_folder(py_func)
    if folder is not None:
        try:
            return _cache_class()(py_func, folder, build=_build_dir() is not None)
        except Exception:  # Numba's Cache made other attributes: behave as numba.njit(cache=True)
            if _build_dir() is not None:
                raise
    from numba.core.caching import FunctionCache

    return FunctionCache(py_func)


def _build_dir() -> Path | None:
    value = os.environ.get(BUILD_ENV)
    return Path(value) if value else None


def _shipped_folder(py_func: Callable) -> Path | None:
    """Where ``py_func``'s shipped entries are: the module's folder within the package, under
    the shipped (or, building, the build's) cache folder; None for a function outside msa or
    where nothing was shipped."""
    root = _build_dir() or SHIPPED
    if not root.is_dir() and _build_dir() is None:
        return None
    try:
        rel = Path(inspect.getfile(py_func)).resolve().parent.relative_to(PACKAGE)
    except ValueError:
        return None
    return root / rel


@functools.cache
def package_stamp() -> str:
    """SHA-256 of every module of the package (its path and bytes; ``.py`` files of the package
    and its subpackages, not of data folders the wheel adds, e.g. ``_kernels/build.py``) and
    of NumPy's version (major.minor: Numba's typing follows NumPy's rules): the source stamp
    of the shipped entries. Numba's own stamp is the function's file alone, which misses a
    change in a function it calls from another module; Numba's version and the CPU are in
    its index."""
    import numpy

    h = hashlib.sha256()
    h.update(("numpy " + ".".join(numpy.__version__.split(".")[:2]) + "\0").encode())
    for rel in sorted(_modules(), key=PurePath.as_posix):
        h.update(rel.as_posix().encode() + b"\0")
        h.update(hashlib.sha256((PACKAGE / rel).read_bytes()).digest())
    return h.hexdigest()


def _modules() -> Iterator[PurePath]:
    """The package's ``.py`` files that :func:`package_stamp` covers, relative to it. The walk
    leaves out the shipped entries' folder (hundreds of files) and ``__pycache__`` without
    listing them: 0.3 ms against 1.8 ms for ``rglob`` in every run (2-core dev machine)."""
    for root, folders, names in os.walk(PACKAGE):
        here = Path(root)
        folders[:] = [f for f in folders if f != "__pycache__" and not (here == PACKAGE and f == SHIPPED.name)]
        if _module_folder(here):
            rel = here.relative_to(PACKAGE)
            yield from (rel / name for name in names if name.endswith(".py"))


def _module_folder(folder: Path) -> bool:
    """The package's own folder, or a subpackage of it (not a data folder such as _kernels)."""
    return folder == PACKAGE or (folder / "__init__.py").is_file()


@functools.cache
def _cache_class() -> type:
    from numba.core.caching import FunctionCache, IndexDataCacheFile

    class ShippedFirstCache(FunctionCache):
        """Numba's per-function cache, reading ``folder`` (the shipped entries) first.

        Misses are compiled and saved where Numba's locators say (its usual cache), never in
        ``folder``; building, only ``folder`` is read and written.
        """

        def __init__(self, py_func: Callable, folder: Path, build: bool) -> None:
            super().__init__(py_func)
            # What the methods below use of the instance Numba's Cache made (its class's methods
            # are checked by hooks_off): missing in some Numba, the caller falls back.
            self._impl, self._enabled  # noqa: B018
            self._folder = folder
            self._build = build
            self._lock_file: Any = None
            self._shipped = IndexDataCacheFile(
                cache_path=str(folder), filename_base=self._impl.filename_base, source_stamp=package_stamp()
            )

        def _load_overload(self, sig: Any, target_context: Any) -> Any:
            if not self._enabled:
                return None
            key = self._index_key(sig, target_context.codegen())
            data = self._shipped.load(key)
            if data is None and self._build and self._lock():
                data = self._shipped.load(key)  # another build process may have compiled it meanwhile
                if data is not None:
                    self._unlock()
            if data is not None:
                return self._impl.rebuild(target_context, data)
            if self._build:
                return None  # compiled next, then _save_overload (which releases the lock)
            return super()._load_overload(sig, target_context)

        def _save_overload(self, sig: Any, data: Any) -> None:
            if not self._build:
                super()._save_overload(sig, data)
                return
            try:
                if self._enabled and self._impl.check_cachable(data):
                    self._folder.mkdir(parents=True, exist_ok=True)
                    self._shipped.save(self._index_key(sig, data.codegen), self._impl.reduce(data))
            finally:
                self._unlock()

        # Building in several processes (msa._runtime.precompile), each function is compiled by one:
        # the others wait on its lock file, then load what it saved. Call graphs have no cycles,
        # so a process holding one function's lock while it compiles a callee cannot deadlock.
        def _lock(self) -> bool:
            try:
                import fcntl
            except ImportError:  # no fcntl (Windows): the build runs one process
                return False
            if self._lock_file is None:
                self._folder.mkdir(parents=True, exist_ok=True)
                self._lock_file = open(self._folder / f"{self._impl.filename_base}.lock", "wb")
                fcntl.flock(self._lock_file, fcntl.LOCK_EX)
            return True

        def _unlock(self) -> None:
            if self._lock_file is not None:
                self._lock_file.close()  # releases the flock
                self._lock_file = None

    return ShippedFirstCache
