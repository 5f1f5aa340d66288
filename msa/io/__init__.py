"""Reading FASTA and writing alignments: the only place that touches files."""
from msa.io.fasta import InputError, parse_fasta, read_aligned_fasta, read_fasta
from msa.io.formats import FORMAT_SUFFIXES, FORMATS, OutputFormat, write_alignment
from msa.io.output import open_output

__all__ = [
    "FORMATS",
    "FORMAT_SUFFIXES",
    "InputError",
    "OutputFormat",
    "open_output",
    "parse_fasta",
    "read_aligned_fasta",
    "read_fasta",
    "write_alignment",
]
