"""``python -m lab.shape_sweep``: a forwarding module (the sweep is :mod:`lab.bench.shapes`)."""
import sys

from lab.cli.scripts import shape_sweep

if __name__ == "__main__":
    sys.exit(shape_sweep())
