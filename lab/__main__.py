import os
import sys

# ``python -m lab`` puts the working folder first on sys.path: run in a student's folder, its
# json.py, numpy.py or exercises/ (forged hidden tests) would be imported by the teacher's lab. Drop
# it, unless it is the folder that holds this lab (a checkout run from its root).
if sys.path and sys.path[0] and os.path.realpath(sys.path[0]) == os.path.realpath(os.getcwd()) \
        and os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) != os.path.realpath(os.getcwd()):
    del sys.path[0]

from lab.cli import entry  # noqa: E402

entry()
