"""Which engine counts, and the messages that say how to get one: Nsight Compute's ``ncu`` (found on
PATH, under /usr/local/cuda/bin or $CUDA_HOME/bin) or CUPTI through the ``cupti-python`` package."""
from __future__ import annotations

import glob
import importlib.util
from lab.core.sanitizer import find_tool

NCU_FIX = ("install Nsight Compute (the CUDA toolkit's ncu, e.g. /usr/local/cuda/bin/ncu) or put ncu on PATH; "
           "without a GPU, lab counters KERNEL --sim counts sectors in the simulator")
PERM_FIX = ("let this user read the GPU's performance counters: run as root, or load the driver with "
            "NVreg_RestrictProfilingToAdminUsers=0 (https://developer.nvidia.com/ERR_NVGPUCTRPERM)")
CUPTI_FIX = ("pip install 'numba-gpu-lab[counters]' (cupti-python: CUPTI without the CUDA toolkit), or install "
             "Nsight Compute (ncu)")
NO_ENGINE = ("lab counters needs Nsight Compute (ncu) or CUPTI (the cupti-python package), and neither was found: "
             f"{NCU_FIX}; or {CUPTI_FIX.split(' (cupti-python')[0]}")
TOOLS = ("auto", "ncu", "cupti")


def find_ncu() -> str | None:
    """The ncu executable: $LAB_NCU, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin, /opt/nvidia/nsight-compute."""
    return find_tool("ncu", "LAB_NCU", sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True))


def cupti_available() -> bool:
    """Whether the cupti-python package (``import cupti``) is installed here."""
    try:
        return importlib.util.find_spec("cupti") is not None
    except (ImportError, ValueError):
        return False

