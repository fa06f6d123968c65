"""lab.core.collect: collections between contenders scan only new objects, and leave no freeze behind."""
import gc
import weakref

from lab.core import collect


class Node:
    def __init__(self):
        self.me = self  # a reference cycle: only the collector frees it


def test_between_frees_new_cycles_and_freezes_only_inside_the_run():
    assert gc.get_freeze_count() == 0
    with collect.frozen():
        assert gc.get_freeze_count() > 0  # what was alive when the run started
        before = gc.get_freeze_count()
        survivor, garbage = Node(), Node()
        gone = weakref.ref(garbage)
        del garbage
        collect.between()
        assert gone() is None  # the cycle made during the run is collected
        assert gc.get_freeze_count() > before  # the survivors are frozen: the next collection skips them
        late = weakref.ref(survivor)
        del survivor  # garbage now, but frozen: it waits for the end of the run
        collect.between()
        assert late() is not None
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert late() is None  # unfrozen at the end: the next collection frees it


def test_a_callers_own_freeze_is_left_alone():
    gc.freeze()
    try:
        count = gc.get_freeze_count()
        with collect.frozen():
            collect.between()
            # nothing new frozen (a frozen object that was freed meanwhile can only lower the count)
            assert gc.get_freeze_count() <= count
        assert gc.get_freeze_count() > 0  # the caller's freeze was not undone
    finally:
        gc.unfreeze()
