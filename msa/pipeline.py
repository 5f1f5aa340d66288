"""The whole run, stage by stage: dedupe, guide tree (and the sequences' weights from it),
progressive alignment, refinement, rows."""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from msa.alignment import AlignedRows
from msa.alphabet import detect_seq_type, load_matrix
from msa.backends import Backend, get_backend
from msa.consistency import top_library
from msa.params import AlignParams, gap_costs
from msa.profile import gap_vector
from msa.progressive import progressive_align, progressive_align_many
from msa.progress import current
from msa.refine import refine_many
from msa.seqdb import SeqDB
from msa.tree import GuideTree, NewickError, build_guide_tree, read_newick
from msa.tree.build import build_guide_trees
from msa.tree.weights import family_weights


def threads_sleep_when_idle() -> None:
    """Idle Numba threads sleep rather than spin (see :func:`_set_threads`): OMP_WAIT_POLICY
    is PASSIVE unless the user set it. GNU libgomp reads it once, when the first parallel
    kernel starts its pool, and that kernel is a family's preparation (de-duplication's hash,
    :func:`prepare_family`): so it is set when this module loads, before anything here runs. Set only
    inside _set_threads it came too late, and every CLI run spun (the 200-sequence example
    1.7 s against 0.4 s on 2 busy cores; docs/start-up.md)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


threads_sleep_when_idle()


@dataclass
class PreparedFamily:
    """A family ready to align: ``db`` (every record, in its alphabet) under its resolved
    ``params``, and the distinct sequences (``unique``, at ``reps``; record ``i`` is
    ``unique``'s ``inverse[i]``) that the tree and the alignment take."""

    db: SeqDB
    params: AlignParams
    reps: np.ndarray
    inverse: np.ndarray
    unique: SeqDB

    @property
    def residues(self) -> int:
        """Residues of the distinct sequences: the work of its alignment."""
        return int(self.unique.offsets[-1])

    def aligned(self, columns: np.ndarray, width: int) -> AlignedRows:
        """The alignment of every record from the distinct sequences' columns."""
        index = self.inverse if len(self.reps) < len(self.db) else None  # duplicates are byte-identical, so their rows are too
        return AlignedRows(self.db.names, self.db.descriptions, self.unique, columns, width, index)


def prepare_family(db: SeqDB, params: AlignParams, note: bool = True) -> PreparedFamily:
    """The sequence type settled (:func:`prepare`, ``note`` as there) and the duplicates found
    (unless ``params.keep_duplicates``). Raises ValueError for no sequences."""
    if len(db) == 0:
        raise ValueError("no sequences to align")
    db, params = prepare(db, params, note)
    if params.keep_duplicates:
        reps, inverse = np.arange(len(db)), np.arange(len(db))
    else:
        reps, inverse = db.unique()
    unique = db.subset(reps) if len(reps) < len(db) else db
    return PreparedFamily(db, params, reps, inverse, unique)


def align_db(
    db: SeqDB,
    params: AlignParams,
    backend: Backend | Callable[[], Backend] | None = None,
    tree: GuideTree | None = None,
) -> AlignedRows:
    """Align every sequence of ``db``; duplicates are aligned once and copied back.

    ``backend`` may be a function that returns one, called once the duplicates
    are found (the CLI's backend starts on another thread meanwhile). ``tree``
    is a guide tree from ``tree_db`` with the same params (the CLI's
    ``--tree-out`` builds it first, writes it, and aligns along it).
    """
    return align_prepared(prepare_family(db, params), backend, tree)


def align_prepared(
    family: PreparedFamily, backend: Backend | Callable[[], Backend] | None = None, tree: GuideTree | None = None
) -> AlignedRows:
    """:func:`align_db` of a family :func:`prepare_family` made."""
    params = family.params
    backend = _started(backend, params)
    _set_threads(params.threads)
    if tree is None:
        tree = family_tree(family, backend)

    matrix = load_matrix(params.matrix)
    gaps = gap_costs(params, len(family.db))
    weights = family_weights(tree, params)
    library = family_library(family.unique, tree, matrix, params, backend)
    aligned = [progressive_align(family.unique, tree, matrix, gaps, backend, weights, library)]
    [(columns, width)] = refine_stage([family.unique], aligned, [tree], matrix, [gaps], backend, params, [weights])
    return family.aligned(columns, width)


def family_tree(family: PreparedFamily, backend: Backend) -> GuideTree:
    """The guide tree a family is aligned along: ``params.tree_file``'s, else built (under the
    ``guide tree`` stage)."""
    params = family.params
    _set_threads(params.threads)
    if params.tree_file is not None:
        return read_tree_file(params.tree_file, family.db, family.reps)
    with current().stage("guide tree"):
        return build_guide_tree(family.unique, params, backend)


def align_families(
    families: Sequence[PreparedFamily], backend: Backend | Callable[[], Backend] | None = None
) -> list[AlignedRows]:
    """:func:`align_db` of many prepared families at once, each output the same: families of
    one resolved params (one matrix; in a run, one per sequence type) build their guide trees
    in shared backend calls (:func:`msa.tree.build.build_guide_trees`) and go through the
    progressive stage together (:func:`msa.progressive.progressive_align_many`), so each
    level's launches serve every family. A tree file (``params.tree_file``) is not taken
    here: such families go through align_db. Raises as align_db does, for the first
    family that fails (the caller aligns them alone to tell which).
    """
    out: list[AlignedRows | None] = [None] * len(families)
    if not families:
        return []
    backend = _started(backend, families[0].params)
    groups: dict[AlignParams, list[int]] = {}
    for f, family in enumerate(families):
        if family.params.tree_file is not None:
            raise ValueError("a guide tree file is aligned one family at a time (align_db)")
        groups.setdefault(family.params, []).append(f)
    for params, members in groups.items():
        _set_threads(params.threads)
        uniques = [families[f].unique for f in members]
        with current().stage("guide tree"):
            trees = build_guide_trees(uniques, params, backend)
        gaps = [gap_costs(params, len(families[f].db)) for f in members]
        matrix = load_matrix(params.matrix)
        weights = [family_weights(tree, params) for tree in trees]
        libraries = [family_library(db, tree, matrix, params, backend) for db, tree in zip(uniques, trees)]
        aligned = progressive_align_many(uniques, trees, matrix, gaps, backend, weights, libraries)
        aligned = refine_stage(uniques, aligned, trees, matrix, gaps, backend, params, weights)
        for f, (columns, width) in zip(members, aligned):
            out[f] = families[f].aligned(columns, width)
    return out  # type: ignore[return-value]


def family_library(db: SeqDB, tree: GuideTree, matrix: np.ndarray, params: AlignParams, backend: Backend):
    """The consistency library of a family's top merges (msa.consistency), or None where
    ``params`` draws no samples for a family of its size."""
    samples = params.consistency_samples(len(db))
    if not samples:
        return None

    with current().stage("consistency library"):
        return top_library(db, tree, matrix, gap_vector(gap_costs(params, 2)), backend, samples, params.seed,
                           params.consistency_draw)


def refine_stage(
    dbs: list[SeqDB], aligned: list[tuple[np.ndarray, int]], trees: list[GuideTree], matrix: np.ndarray,
    gaps: list, backend: Backend, params: AlignParams, weights: list[np.ndarray | None] | None = None,
) -> list[tuple[np.ndarray, int]]:
    """The progressive alignments ``(columns, width)`` refined (msa.refine) as ``params.refine``
    says for each family's size, the families in shared backend calls, each with the sequence
    weights its progressive stage had."""
    rounds = [params.refine_rounds(len(db)) for db in dbs]
    todo = [f for f, r in enumerate(rounds) if r > 0]
    if not todo:
        return aligned

    out = list(aligned)
    for r in sorted({rounds[f] for f in todo}):  # one group per round count (one with auto)
        group = [f for f in todo if rounds[f] == r]
        with current().stage("refining", total=r) as advance:
            done = refine_many([dbs[f] for f in group], [aligned[f][0] for f in group], [aligned[f][1] for f in group],
                               [trees[f] for f in group], matrix, [gaps[f] for f in group], gap_costs(params, 2),
                               backend, r, seed=params.seed, advance=advance,
                               weights=None if weights is None else [weights[f] for f in group])
        for f, (columns, width, _) in zip(group, done):
            out[f] = (columns, width)
    return out


def tree_prepared(family: PreparedFamily, backend: Backend | Callable[[], Backend] | None = None) -> GuideTree:
    """The guide tree :func:`align_prepared` would build for ``family``, over its distinct
    sequences (``family.unique.names`` name its leaves); ``msa align --tree-out`` writes it,
    then aligns along it."""
    params = family.params
    backend = _started(backend, params)
    _set_threads(params.threads)
    return build_guide_tree(family.unique, params, backend)


def _started(backend: Backend | Callable[[], Backend] | None, params: AlignParams) -> Backend:
    """``backend``, or the one a function returns, or ``params.device``'s."""
    if backend is None:
        return get_backend(params.device, quiet=params.quiet)
    if callable(backend):
        return backend()
    return backend


def tree_db(db: SeqDB, params: AlignParams, backend: Backend | None = None) -> tuple[GuideTree, list[str]]:
    """The guide tree over the distinct sequences, with the leaf names it uses."""
    if len(db) == 0:
        raise ValueError("no sequences")
    db, params = prepare(db, params)
    backend = backend or get_backend(params.device, quiet=params.quiet)
    _set_threads(params.threads)
    reps = np.arange(len(db)) if params.keep_duplicates else db.unique()[0]
    unique = db.subset(reps) if len(reps) < len(db) else db
    return build_guide_tree(unique, params, backend), unique.names


def prepare(db: SeqDB, params: AlignParams, note: bool = True) -> tuple[SeqDB, AlignParams]:
    """The family's sequence type settled: detected if ``auto`` (with ``note``, a
    line on the current reporter says which; the CLI puts it in its final line
    instead), params resolved for it (matrix and gap costs), and ``db``'s codes
    in its alphabet. Resolved params pass through unchanged.
    """
    detected = None
    if params.seq_type == "auto":
        detected = detect_seq_type(db.residues, db.offsets)
        if note and not params.quiet:
            current().note(f"sequence type: {detected} (detected; --seq-type sets it)")
    run = params.resolved(detected)
    return db.encoded(run.seq_type), run


def read_tree_file(path: str, db: SeqDB, reps: np.ndarray) -> GuideTree:
    """A user's Newick tree over the input names, restricted to the distinct sequences.

    Raises:
        NewickError: naming the file: not UTF-8 text, not Newick, or not over these names.
    """
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NewickError(f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at {exc.start})") from None
    try:
        return read_newick(text, [db.names[i] for i in reps])
    except NewickError as exc:
        raise NewickError(f"{path}: {exc}") from None


def _set_threads(threads: int) -> None:
    """Thread count. Idle threads sleep (OMP_WAIT_POLICY, set at this module's import): Numba's
    OpenMP pool (GNU libgomp) spins after every parallel region by default; on shared or
    busy cores those spinning threads take the CPU from the serial work between regions
    (the one-merge levels of the progressive stage): PF00009.1000's progressive stage took
    1.7 s spinning, 0.9 s passive."""
    if threads <= 0:
        return
    import numba

    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
