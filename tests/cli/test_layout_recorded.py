"""80 columns on recorded documents: the grid and counters tables of tests/fixtures/reports (``--json``
output recorded by ``python -m tests.cli.record_reports``) rendered by the same views the commands use,
at 80 columns and narrower, without simulating the kernels again (tests/cli/test_columns.py runs the
commands themselves). Each recording is validated against its schema first: a stale one fails here."""

import contextlib
import io
import json
import os

import pytest

from tests.cli.record_reports import OUT, REPORTS
from tests.cli.test_columns import fits

jsonschema = pytest.importorskip("jsonschema")


def _render(view, doc, columns):
    """What ``view(doc)`` prints to a pipe at COLUMNS=columns."""
    out = io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(columns)
    try:
        with contextlib.redirect_stdout(out):
            view(doc)
    finally:
        if old is None:
            os.environ.pop("COLUMNS")
        else:
            os.environ["COLUMNS"] = old
    return out.getvalue()


def _view(name):
    if name.startswith("grid-"):
        from lab.cli.views.inspect import print_grid

        return print_grid
    from lab.cli.views.hardware import print_counters

    return print_counters


@pytest.mark.parametrize("columns", [80, 60])
@pytest.mark.parametrize("name", sorted(REPORTS))
def test_recorded_tables_fit_the_terminal(name, columns):
    from tests.cli.test_schemas import validate

    schema, args = REPORTS[name]
    doc = validate(json.loads((OUT / f"{name}.json").read_text()), schema)
    text = _render(_view(name), doc, columns)
    fits(text, columns, where=f"lab {' '.join(args)} at {columns} columns (recorded)")
    if name.startswith("grid-"):
        assert "threads launched" in text and "map of the block" in text, text
    else:
        assert "verdict" in text and "sect/req" in text, text
        assert all(r["variant"] in text for r in doc["rows"]), text
