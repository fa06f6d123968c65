"""The engine (lab.core.runner.run): progress events in order and nothing printed; the simulator's
cost estimate (announced with a smaller --size when long, refused above ~10 minutes unless asked);
in the simulator each row is checked once and nothing is timed unless --repeats asks."""
import pytest

from tests.conftest import SIMULATOR

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="front-door checks run in the simulator")


def test_run_reports_progress_events_in_order(capsys):
    from lab.core.runner import Options, run

    events = []
    report = run(Options("vecadd", threads=32, size="50", repeats=1, warmup=0, contenders=["numba", "numpy"]),
                 "simulator", progress=lambda event, rep, **info: events.append((event, dict(info), len(rep.rows))))
    assert capsys.readouterr().out == ""  # the engine printed nothing
    assert events[0] == ("start", {}, 0) and events[-1][0] == "done"
    rows = [(info["row"].variant, n) for event, info, n in events if event == "row"]
    assert rows == [(r.variant, i + 1) for i, r in enumerate(report.rows)]  # each row as it finishes
    stages = [(info["variant"], info["stage"]) for event, info, _ in events if event == "stage"]
    assert stages[:2] == [("element_per_thread", "compile + check"), ("element_per_thread", "time")]


def test_a_long_simulation_is_announced_with_a_smaller_size():
    from lab.cli.views import report as R
    from lab.core.runner import Options, run

    class Stop(Exception):
        pass

    seen = {}

    def progress(event, rep, **info):
        seen["report"] = rep
        raise Stop  # only the estimate matters here: stop before anything is simulated

    with pytest.raises(Stop):  # --yes: above ~10 minutes it would not start at all (test below)
        run(Options("matvec", threads=32, size="4096x1024", yes=True), "simulator", progress=progress)
    rep = seen["report"]
    assert rep.estimate_s > 600 and not rep.rows
    line = R.header_lines(rep)[-1]
    assert "roughly" in line and rep.quick_options in line
    smaller = tuple(int(d) for d in rep.quick_options.removeprefix("--size ").split("x"))
    assert smaller[0] * smaller[1] < 4096 * 1024
    # and the suggested size really is quick by the same model
    from lab.core.runner import quick_options, simulator_calls, simulator_seconds
    import kernels

    spec = kernels.load("matvec")
    calls = simulator_calls(repeats=0, warmup=0)  # the simulator's default: one checked call a row
    assert calls == 1 and simulator_seconds(spec, smaller, list(spec.variants), 32, calls) < 30
    # where blocks of 1024 simulated threads alone cost too much (here: 50 calls a row, over 15 s even at
    # 1x1 by the model), --threads 32 is suggested too; a few calls of them are quick at a smaller size
    assert simulator_seconds(spec, (1, 1), list(spec.variants), 1024, 50) > 15
    assert quick_options(spec, (48, 80), list(spec.variants), 1024, 50).startswith("--threads 32 --size ")
    assert quick_options(spec, (48, 80), list(spec.variants), 1024, 5).startswith("--size ")


def test_a_simulation_estimated_above_ten_minutes_is_refused_without_yes(lab):
    from lab.core.errors import LabError
    from lab.core.runner import REFUSE_SIMULATION_S, Options, run

    started = []
    with pytest.raises(LabError, match=r"roughly .* \(estimated\); try --size \d+x\d+ .* or --yes") as e:
        run(Options("matvec", variants=["split_k"], size="16384x4096"), "simulator",
            progress=lambda event, rep, **info: started.append(event))
    assert not started and REFUSE_SIMULATION_S == 600  # refused before the run started (no inputs made)
    assert "matvec 16384x4096" in str(e.value)
    code, out, err = lab("run", "matvec", "--variant", "split_k", "--size", "16384x4096", "--sim")
    assert code == 2 and out == "" and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and "--yes" in err and "estimated" in err
    # the calls counted: --repeats 3 makes the same run 4 calls a row, 4x the estimate
    from lab.core.runner import simulator_calls

    assert simulator_calls(repeats=3, warmup=0) == 4 and simulator_calls(repeats=2, warmup=1) == 4


def test_simulator_checks_each_row_once_and_times_nothing_by_default():
    """The first ten minutes: no timed calls in the simulator unless --repeats asks; each row shows
    its first call (compile + one run) and its check; the JSON keeps every key (None when not timed)."""
    from lab.core.runner import Options, run

    events = []
    rep = run(Options("vecadd", threads=32, size="50", contenders=["numba", "numpy"]), "simulator",
              progress=lambda event, r, **info: events.append((event, info.get("stage"))))
    assert rep.repeats == 0 and rep.warmup == 0 and "checked once" in rep.stop_rule and "--repeats N" in rep.stop_rule
    assert [r.variant for r in rep.rows] == ["element_per_thread", "four_per_thread", "auto", "reference (CPU)"]
    assert all(r.ok and r.measurement is None and r.first_call_ms > 0 for r in rep.rows)
    assert ("stage", "time") not in events and ("stage", "compile + check") in events
    doc = rep.to_dict()
    assert doc["repeats"] == 0
    for r in doc["results"]:
        assert r["median_ms"] is None and r["iqr_ms"] is None and r["timed_calls"] == 0 and r["timing"] is None
        assert r["first_call_ms"] > 0 and r["ok"] and r["max_abs_err"] is not None
    # --repeats N still times N calls (of the simulation's wall clock)
    rep = run(Options("vecadd", threads=32, size="50", contenders=["numba"], variants=["element_per_thread"],
                      repeats=2), "simulator")
    (row,) = rep.rows
    assert row.measurement.n == 2 and rep.to_dict()["results"][0]["median_ms"] > 0
    assert rep.stop_rule == "2 timed calls a row after 0 warm-up"
