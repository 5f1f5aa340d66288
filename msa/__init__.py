"""msa: multiple sequence alignment of large protein families, on the GPU or the CPU.

Public API: ``align`` and ``build_tree`` for sequences in memory, ``read_fasta``
and ``write_alignment`` for files, ``AlignParams`` for every option.
"""
__version__ = "0.1.0"

from msa.api import align, build_tree  # noqa: E402
from msa.io import FORMATS, InputError, read_fasta, write_alignment  # noqa: E402
from msa.params import AlignParams  # noqa: E402
from msa.tree.guide_tree import GuideTree  # noqa: E402

__all__ = [
    "FORMATS",
    "AlignParams",
    "GuideTree",
    "InputError",
    "__version__",
    "align",
    "build_tree",
    "read_fasta",
    "write_alignment",
]
