"""``python -m msa`` runs the command line."""
from msa.cli import main

main()
