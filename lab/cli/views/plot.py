"""matplotlib, imported only when a command is asked for a PNG (the optional ``plot`` extra), and
the one way a figure reaches its file: through a temporary file beside it (lab.core.files)."""
from __future__ import annotations

from lab.core.errors import LabError
from lab.core.files import atomic_path


def pyplot():
    """matplotlib.pyplot with the file-only Agg backend; LabError (exit 2) when matplotlib is missing."""
    try:
        import matplotlib  # lazy: optional (matplotlib)
    except ImportError:
        raise LabError("--png needs matplotlib, which is not installed: pip install 'numba-gpu-lab[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: optional (matplotlib)

    return plt


def save(fig, path: str, fmt: str = "png", **savefig_kw) -> None:
    """Write ``fig`` to ``path`` in ``fmt`` (png or svg, whatever the file's name ends with)
    atomically, then close it: a failed or interrupted write leaves no half picture behind;
    LabError naming the path when it cannot be written."""
    try:
        with atomic_path(path, "picture") as tmp:
            fig.savefig(tmp, format=fmt, **savefig_kw)
    finally:
        pyplot().close(fig)
