#!/usr/bin/env bash
# Session 27, call B (1 GPU): the default command (consistency also at the merges where a large
# cluster takes in a few sequences) side by side with FAMSA 2 default, one process per family
# (msa served by its warm server), then msa --consistency off per family (10^4), then one -O run
# of each set with its stages.
set -u
source benchmarks/results/h200-session26/install.sh
source benchmarks/results/h200-session27/sets.sh
