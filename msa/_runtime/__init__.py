"""What starts a command, above the pipeline: msa's own bytecode cache, the backend's start on
background threads with the CUDA context made through the driver, forked reading, and the
wheel build's precompile step. Nothing here aligns anything or outlives the command.

The pipeline imports :mod:`msa.jit` (``njit``, the shipped compiled code) and
:mod:`msa.interrupts` (its checkpoints), both below it; which backend ``--device auto``
starts is planned with the run (:mod:`msa.run.plan`).
"""
