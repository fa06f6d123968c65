"""Everything that imports torch: sharing GPU memory with PyTorch and the torch contender ops.

The rest of the lab never imports torch at module level; it reaches torch through this package,
and only when torch is installed and asked for.
"""
