"""msa: multiple sequence alignment of large protein and nucleotide families, on the GPU or the CPU.

Public API: ``align`` and ``build_tree`` for sequences in memory, ``read_fasta``
and ``write_alignment`` for files, ``align_files`` for a run over many files
(one output each in a directory), ``AlignParams`` for every option. Nothing is
printed: notes go to the ``msa`` logger (see ``align``).

The names load on first use (PEP 562), so that ``import msa.cli`` and
``msa --help`` do not pay for NumPy's and Numba's start-up before a command
needs them.
"""
import importlib as _importlib
import typing as _typing

__version__ = "0.1.0"

if _typing.TYPE_CHECKING:
    from msa.api import align, build_tree
    from msa.io import FORMATS, InputError, read_fasta, write_alignment
    from msa.params import AlignParams
    from msa.run import align_files
    from msa.tree.guide_tree import GuideTree

_HOMES = {
    "FORMATS": "msa.io",
    "AlignParams": "msa.params",
    "GuideTree": "msa.tree.guide_tree",
    "InputError": "msa.io",
    "align": "msa.api",
    "align_files": "msa.run",
    "build_tree": "msa.api",
    "read_fasta": "msa.io",
    "write_alignment": "msa.io",
}

__all__ = ["__version__", *_HOMES]


def __getattr__(name: str) -> _typing.Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'msa' has no attribute {name!r}")
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """Only what users call: the public names, not the submodules or helper imports."""
    return sorted(__all__)
