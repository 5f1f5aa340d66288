"""The ``msa`` command: align, add, merge, tree, score.

Every default comes from ``AlignParams`` (one source of truth). Expected
failures (bad input, missing files, no GPU) end in one ``msa: error: ...``
line on stderr and exit status 1, never a traceback; stdout carries only the
alignment, tree or scores.
"""
from __future__ import annotations

from msa.cli.app import app, main
from msa.cli import align, profiles, tools  # noqa: F401  (each registers its commands on app)

__all__ = ["app", "main"]
