"""The library contenders of the kernels whose modules would be too long with them: ``<kernel>.py`` here
holds what ``kernels/<kernel>.py``'s spec declares in ``contenders`` (the CuPy, torch and Triton ops a
student compares the ladder against). Each op takes its library's module first (kernels.spec.KernelSpec,
``contenders``), so nothing here imports CuPy, torch or Triton when it loads."""
