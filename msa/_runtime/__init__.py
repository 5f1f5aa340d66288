"""Process machinery kept out of the pipeline's way: msa's own bytecode cache, the shipped
jit cache and its precompile step, the backend's start on background threads, the CUDA
context made through the driver, forked reading, interrupts.

Nothing here aligns anything; the pipeline modules import :mod:`msa.jit` for
``njit`` and :mod:`msa.interrupts` for their checkpoints, and the run layer
imports the rest.
"""
