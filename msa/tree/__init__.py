"""Guide trees: PartTree and exact linkage over 6-mer (or LCS) distances, Newick in and out."""
from msa.tree.build import build_guide_tree
from msa.tree.guide_tree import GuideTree
from msa.tree.newick import NewickError, read_newick, write_newick

__all__ = ["GuideTree", "NewickError", "build_guide_tree", "read_newick", "write_newick"]
