"""The Python API: align sequences already in memory and get a Biopython alignment back.

Nothing is printed: the notes the CLI prints (the backend chosen, the detected
sequence type) are INFO records of the ``msa`` logger and each stage's time a
DEBUG record, shown only where the caller configures logging
(``logging.basicConfig(level=logging.INFO)``); ``quiet=True`` leaves out the notes.
"""
from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any, Iterable

from msa.io.records import db_from_records
from msa.params import AlignParams

if TYPE_CHECKING:
    from Bio.Align import Alignment

    from msa.tree.guide_tree import GuideTree  # importing msa.tree starts Numba

_OPTIONS = frozenset(f.name for f in fields(AlignParams))


def align(records: Iterable[Any], params: AlignParams | None = None, **options: Any) -> "Alignment":
    """Align protein, DNA or RNA sequences, as ``msa align`` does.

    Args:
        records: Biopython ``SeqRecord`` objects or ``(name, sequence)`` pairs.
            Gaps (``-``, ``.``) in them are removed first.
        params: a whole parameter set; ``options`` override single fields of it.
        **options: any ``AlignParams`` field, e.g. ``guide_tree="upgma"``, or
            ``seq_type="dna"`` (by default the type is detected, as ``--seq-type auto``).
            Notes go to the ``msa`` logger (this module's docstring), not to stderr.

    Returns:
        A ``Bio.Align.Alignment`` in input order, whose sequences are SeqRecords
        carrying the input names and descriptions; write it with
        ``Bio.Align.write(alignment, path, "clustal")`` or print it with
        ``format(alignment, "fasta")``.

    Raises:
        msa.io.InputError: a bad character or an empty sequence.
        TypeError: an unknown option.

    Example:
        >>> aln = align([("a", "MKVLA"), ("b", "MKLA")])  # doctest: +SKIP
        >>> print(format(aln, "fasta"))  # doctest: +SKIP
        >a
        MKVLA
        >b
        MK-LA
        <BLANKLINE>
    """
    run = _params(params, options)
    db = db_from_records(records)
    from msa.io.bioalign import to_alignment  # local: (b) Biopython: 25 ms, for align() only (docs/start-up.md, "Function-local imports")
    from msa.pipeline import align_db  # local: (b) Numba: loaded only once the input has passed the checks

    aligned = align_db(db, run)
    return to_alignment(aligned.names, aligned.descriptions, aligned.rows)


def build_tree(
    records: Iterable[Any], params: AlignParams | None = None, **options: Any
) -> tuple[GuideTree, list[str]]:
    """The guide tree ``align`` would use, and the names of its leaves.

    Identical sequences share one leaf (named after the first of them) unless
    ``keep_duplicates=True``. ``msa.tree.write_newick(tree, names)`` gives
    its Newick text.
    """
    run = _params(params, options)
    db = db_from_records(records)
    from msa.pipeline import tree_db  # local: (b) Numba: loaded only once the input has passed the checks

    return tree_db(db, run)


def _params(params: AlignParams | None, options: dict[str, Any]) -> AlignParams:
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(_OPTIONS))}")
    return (params or AlignParams()).with_(**options)
