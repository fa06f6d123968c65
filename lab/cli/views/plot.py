"""matplotlib, imported only when a command is asked for a PNG (the optional ``plot`` extra)."""
from __future__ import annotations

from lab.core.errors import LabError


def pyplot():
    """matplotlib.pyplot with the file-only Agg backend; LabError (exit 2) when matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        raise LabError("--png needs matplotlib, which is not installed: pip install 'numba-gpu-lab[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


