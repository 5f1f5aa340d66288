"""What the guide-tree distances share, whichever backend computes them.

``kmers``: the 6-mer struct-array layout and its constants; ``condensed``: the
condensed pair order of every distance matrix. The distances themselves are
backend operations (:mod:`msa.backends`), the CPU's kernels the oracle.
"""
