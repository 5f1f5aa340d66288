"""Regressions of what the Hypothesis suite (tests/property) found, one test each, as plain examples."""
from __future__ import annotations

from msa.io import parse_fasta


def test_names_split_at_ascii_blanks_only() -> None:
    """A header's first word ends at an ASCII blank only; a no-break space (U+00A0) or a line
    separator (U+2028) in UTF-8 is part of the name, as for FAMSA, MAFFT and ``msa score``
    (found: '>' + U+00A0 was 'header has no name', and 'a' U+00A0 'b' was named 'a')."""
    db = parse_fasta(">\u00a0\nMKV\n>a\u00a0b c\nMK\n>x\u2028y\nMV\n".encode())
    assert db.names == ["\u00a0", "a\u00a0b", "x\u2028y"]
    assert db.descriptions == ["\u00a0", "a\u00a0b c", "x\u2028y"]
