"""``python -m lab.bench``: an alias of ``lab bench``."""
from lab.cli.scripts import bench_alias

bench_alias()
