"""Issue 41, fifth fresh set (hints7): the first failing message of each mutant of
tests/teach/hint_mutants7.py names its bug and says none of the wrong words it used to get; and the
rules behind them, each beside the look-alike evidence it must stay silent on."""
import os

import pytest

from tests.conftest import BACKEND
from tests.teach import catalogue as C
from tests.teach import hint_mutants7 as H7

pytestmark = pytest.mark.skipif(BACKEND != "simulator", reason="the tracer's diagnoses: simulator only")


@pytest.mark.parametrize("mutant", H7.MUTANTS, ids=[f"{m[0]}-{m[3]}" for m in H7.MUTANTS])
def test_first_message_names_the_bug(mutant, tmp_path):
    ex, label, subs, cls = mutant
    path = tmp_path / f"{ex}.py"
    path.write_text(C.source(C.Wrong(ex, label, subs, [], [], cls)))
    seed = int.from_bytes(os.urandom(4), "little")
    bad = C.first_failures(ex, path, seed, most=1)
    assert bad, f"{ex} / {label} passed (seed {seed})"
    first = bad[0]["message"]
    phrases = H7.CLASSES[cls]
    alternatives = list(phrases) if isinstance(phrases, tuple) else [phrases]  # a tuple: any one list names it
    missing = min(([p for p in ps if p not in first] for ps in alternatives), key=len)
    wrong = [p for p in H7.AVOID.get(cls, ()) if p in first]
    assert not missing and not wrong, f"{ex} / {label} (seed {seed}): missing {missing}, wrong {wrong}: {first}"
