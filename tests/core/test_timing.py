"""The timer, tested: its statistics, labels and stop rule on synthetic samples (no GPU needed), the
NVML clock reading without NVML, the report's noise flag; and, marked gpu, what only a real GPU can
show (L2 flush, host-gap detection, 2000 queued calls, run-to-run agreement, the blocking kernel)."""
import json
import math

import numpy as np
import pytest
from rich.console import Console

from lab.core import clocks
from lab.core import stopping as S
from lab.core import timing as T
from tests.conftest import SIMULATOR

needs_gpu = pytest.mark.skipif(SIMULATOR, reason="needs a CUDA GPU's events and clocks")


# --- Measurement: statistics and labels -------------------------------------------------------------
def test_measurement_statistics():
    m = T.Measurement([1.0, 2.0, 3.0, 4.0, 100.0], T.DEVICE_EVENTS)
    assert m.median_ms == 3.0 and m.iqr_ms == 2.0 and m.n == 5
    assert m.noise == pytest.approx(2 / 3) and m.noisy
    quiet = T.Measurement([1.0, 1.001, 0.999, 1.0], T.DEVICE_EVENTS)
    assert quiet.noise < 0.01 and not quiet.noisy
    assert math.isnan(T.Measurement([0.0, 0.0], T.HOST_CLOCK).noise)


def test_labels():
    m = T.Measurement([1.0] * 12, T.DEVICE_EVENTS_GAPS, {"stop": "fixed count (12)"})
    assert m.host_gaps and m.timing.startswith("median of 12: ") and "host gaps" in m.timing
    assert "fixed count (12)" in m.timing
    assert not T.Measurement([1.0, 1.0], T.DEVICE_EVENTS).host_gaps
    sim = T.Measurement([1.0, 5.0, 9.0], T.SIMULATOR_CLOCK)
    assert sim.noise > T.NOISY and not sim.noisy  # a simulator's wall clock is never flagged


# --- the stop rule ------------------------------------------------------------------------------------
def drive(rule, draw, call_ms, cap=T.BATCH_MAX):
    """Sample like the timer does, with a fake clock that advances by the samples' time."""
    samples, elapsed = [], 0.0
    while not (why := rule.done(samples, elapsed)):
        n = rule.batch(samples, call_ms, cap)
        assert 1 <= n <= cap
        new = [draw() for _ in range(n)]
        samples += new
        elapsed += sum(new) / 1e3 + 1e-4 * n  # plus some host time a call
    return samples, why


def test_stop_rule_fixed_count():
    samples, why = drive(S.StopRule(repeats=2000), lambda: 0.01, 0.01)
    assert len(samples) == 2000 and "fixed" in why and why.criterion == "fixed_count" and why.noise is None


def test_stop_rule_minimums(rng):
    """Quiet, fast calls: stop once 10 samples and 0.25 s of measured time are in."""
    samples, why = drive(S.StopRule(), lambda: 0.1 * (1 + 0.001 * rng.standard_normal()), 0.1)
    assert len(samples) >= 10 and sum(samples) >= 250 and "noise" in why and why.criterion == "max_noise"
    assert why.as_dict() == {"criterion": "max_noise", "noise": S.noise_of(samples), "threshold": 0.01,
                             "samples": len(samples), "elapsed_s": pytest.approx(sum(samples) / 1e3 + 1e-4 * len(samples))}
    assert sum(samples) < 400  # not far past the minimum time
    slow, why = drive(S.StopRule(), lambda: 50.0, 50.0)  # 50 ms calls: at least 10 of them
    assert len(slow) == 10


def test_stop_rule_keeps_sampling_while_noisy_until_the_limit(rng):
    rule = S.StopRule(time_limit_s=1.0, settle_calls=0)  # no convergence test: the time limit alone
    samples, why = drive(rule, lambda: 0.1 * (1 + 0.2 * rng.random()), 0.1)
    assert S.noise_of(samples) > 0.01 and "time limit" in why and why.criterion == "time_limit"
    assert sum(samples) / 1e3 >= 0.5  # ran on well past the 0.25 s minimum


def test_stop_rule_stops_once_the_noise_has_settled(rng):
    """A call whose noise stays put above 1% (uniform 20% spread): no more calls would lower it, so
    sampling stops after the minimum time once 512 calls show it settled, not at the time limit."""
    samples, why = drive(S.StopRule(time_limit_s=3.0), lambda: 0.1 * (1 + 0.2 * rng.random()), 0.1)
    assert "noise settled" in why and S.noise_of(samples) > 0.01 and why.criterion == "noise_settled"
    assert 0.25 <= sum(samples) / 1e3 < 0.4 and len(samples) >= 10 + 512


def test_stop_rule_goes_on_while_the_noise_still_changes(rng):
    """A call whose spread keeps growing (doubling every 300 calls) never settles: the time limit ends it."""
    calls = iter(range(10**6))
    samples, why = drive(S.StopRule(time_limit_s=1.0), lambda: 0.1 * (1 + 0.01 * rng.random() * 2 ** (next(calls) / 300)), 0.1)
    assert "time limit" in why


def test_stop_rule_settling_needs_the_window(rng):
    rule = S.StopRule()
    noisy = list(0.1 * (1 + 0.2 * rng.random(2000)))  # enough samples that the noise has settled whatever the draw
    assert rule.settled(noisy) and not rule.settled(noisy[:500])  # fewer than 10 + 512 samples: not yet
    assert not S.StopRule(settle_calls=0).settled(noisy)
    assert "still changing" in rule.describe(5) and "still changing" not in S.StopRule(settle_calls=0).describe(5)


def test_median_interval_matches_the_normal_theory(rng):
    """The order statistics' 95% interval of the median of n normal draws: 1.96 x 1.2533 sigma / sqrt(n) a side."""
    # 40,000 draws: the interval spans ~390 order statistics, so its width is known to ~5% (at 4,000, ~9%:
    # a 20% bound failed about one run in thirty)
    samples = list(100 + 10 * rng.standard_normal(40000))
    assert S.median_halfwidth(samples) == pytest.approx(1.96 * 1.2533 * 10 / math.sqrt(40000) / 100, rel=0.2)
    assert S.median_halfwidth([1.0, 2.0]) == math.inf


def test_host_rows_stop_once_the_median_is_known(rng):
    """A CPU call with a noise that neither falls below 1% nor settles soon (7 ms, 2% spread): the
    GPU rule runs to its time limit, a CPU row stops once its median's 95% interval is within 2%."""
    draw = lambda: 7.0 * (1 + 0.04 * rng.random())  # noqa: E731
    rule = S.StopRule()
    samples, elapsed, why = [], 0.0, None
    while not (why := rule.done(samples, elapsed, settle=len(samples) % 16 == 0, host=True)):
        samples.append(draw())
        elapsed += samples[-1] / 1e3
    assert "median within" in why and sum(samples) / 1e3 < 0.5 and S.median_halfwidth(samples) <= 0.02
    assert why.criterion == "median_interval"
    assert rule.done(samples, elapsed) is None  # not a CPU row: the noise is above 1% and has not settled
    assert "CPU rows also stop" in rule.describe(5) and "CPU rows" not in S.StopRule(host_median_ci=0).describe(5)


def test_stop_rule_batches_respect_the_launch_queue_cap():
    rule = S.StopRule(repeats=2000)
    assert rule.batch([], 0.01, 64) == 64 and rule.batch([0.01] * 1990, 0.01, 64) == 10
    assert S.StopRule().batch([], 1e-6, 64) == 64  # tiny calls: many wanted, capped


def test_timer_host_mode_counts_and_method():
    calls = []
    t = T.Timer(lambda: calls.append(1), "host")
    m = t.measure(7, 2)
    assert m.n == 7 and len(calls) == 9 and m.method == T.HOST_CLOCK and "fixed" in m.meta["stop"]
    m = t.measure(None, 0, S.StopRule(min_time_s=0.0, max_noise=10.0))
    assert m.n == 10
    with pytest.raises(ValueError):
        t.measure(0, 0)


def test_timer_calls_a_sample_times_back_to_back_calls_and_syncs_between(monkeypatch):
    """calls=N (launch overhead): a sample is N back-to-back calls with no sync between them, divided
    by N; the sync runs after the warm-up and after each sample, outside the timing; the rule decides
    on the samples' whole durations (its minimum time is the time measured), with a structured stop."""
    log, now = [], [0.0]
    monkeypatch.setattr(T.time, "perf_counter", lambda: now[0])

    def call():  # 3 ms a call on the fake clock
        now[0] += 0.003
        log.append("c")

    t = T.Timer(call, "host", sync=lambda: log.append("s"), calls=4)
    m = t.measure(3, warmup=2)
    assert m.samples_ms == pytest.approx([3.0] * 3) and m.min_ms == pytest.approx(3.0)
    assert "".join(log) == "cc" + "s" + "ccccs" * 3  # warm-up and its sync, then each sample and its sync
    assert m.method == T.HOST_CALLS_CLOCK.format(calls=4) and m.meta["calls"] == 4
    assert m.stop == {"criterion": "fixed_count", "noise": None, "threshold": 3, "samples": 3, "elapsed_s": 0.036}
    m = t.measure(None, 0, S.StopRule(min_samples=2, min_time_s=0.05, max_noise=0.5))
    assert m.n == 5 and m.stop["criterion"] == "max_noise"  # 5 samples of 12 ms: >= 50 ms measured, not 5 x 3 ms
    with pytest.raises(ValueError, match="calls must be"):
        T.Timer(call, "device", calls=2)
    with pytest.raises(ValueError, match="calls must be"):
        T.Timer(call, "host", calls=0)


# --- overlapped batches, on a fake GPU --------------------------------------------------------------------
class FakeGPU:
    """Two blocking kernels, events and a stream, faked in order: a launched blocker holds until its
    flag is set; a call's event pair gets the next drawn time; synchronizing runs what was released.
    ``blocks_host``: a call that waits for the GPU (its blocker must give up: not covered)."""

    def __init__(self, draw, blocks_host=False):
        self.draw, self.blocks_host, self.calls = draw, blocks_host, 0
        self.flags = [np.zeros(1, np.int32) for _ in range(2)]
        self.statuses = [np.zeros(1, np.int32) for _ in range(2)]
        self.times = {}

    def blocker(self, flag, status, naps):
        status[0] = 0

    def call(self):
        self.calls += 1
        if self.blocks_host:  # the GPU has to run: the blocker in front gives up
            for st in self.statuses:
                st[0] = 2 if st[0] == 0 else st[0]

    def run(self):
        for fl, st in zip(self.flags, self.statuses):
            if fl[0] == 1 and st[0] == 0:
                st[0] = 1

    def events(self, n):
        gpu = self

        class Event:
            def record(self):
                gpu.times[id(self)] = gpu.draw()

            def synchronize(self):
                gpu.run()

            def query(self):
                return True

        pool = getattr(self, "pool", None) or [(Event(), Event()) for _ in range(2 * T.BATCH_MAX)]
        self.pool = pool
        return [a for a, _ in pool[:n]], [b for _, b in pool[:n]]


def fake_gpu(monkeypatch, draw, blocks_host=False):
    from kernels.compiler import cuda

    gpu = FakeGPU(draw, blocks_host)
    monkeypatch.setattr(T, "_blocker", {"works": True, "why": "fake", "kernel": gpu.blocker, "flag": gpu.flags[0],
                                        "status": gpu.statuses[0], "flags": gpu.flags, "statuses": gpu.statuses})
    monkeypatch.setattr(T, "_events", gpu.events)
    monkeypatch.setattr(cuda, "event_elapsed_time", lambda a, b: gpu.times[id(b)], raising=False)
    return gpu


def test_overlapped_batches_keep_the_rule(monkeypatch, rng):
    """Behind two alternating blockers: a fixed count is exact (no batch past it enqueued), the
    adaptive rule stops on what it had read (the batch in flight then is dropped), every batch covered."""
    gpu = fake_gpu(monkeypatch, lambda: 0.1)
    samples, covered, meta = T._device_samples(gpu.call, S.StopRule(repeats=300), 1e-5, 0.1, False)
    assert len(samples) == 300 == gpu.calls and covered and meta["stop"] == "fixed count (300)"
    gpu = fake_gpu(monkeypatch, lambda: 0.1 * (1 + 0.001 * rng.standard_normal()))
    samples, covered, meta = T._device_samples(gpu.call, S.StopRule(), 1e-5, 0.1, False)
    assert covered and "noise" in meta["stop"] and 250 <= sum(samples) < 400
    assert gpu.calls - len(samples) <= T.BATCH_MAX  # at most the one batch in flight dropped
    assert S.StopRule().done(samples, 0.0)


def test_overlapped_batches_report_a_call_that_blocks_the_host(monkeypatch):
    gpu = fake_gpu(monkeypatch, lambda: 0.1, blocks_host=True)
    samples, covered, meta = T._device_samples(gpu.call, S.StopRule(repeats=100), 1e-5, 0.1, False)
    assert len(samples) == 100 and not covered and meta["hold"] == "flag"


# --- clocks ---------------------------------------------------------------------------------------------
def test_clocks_without_nvml(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_pynvml(name, *a, **k):
        if name == "pynvml":
            raise ImportError("no pynvml")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_pynvml)
    info = clocks.read("00000000:01:00.0")
    assert "NVML absent" in info["error"]
    assert clocks.describe(info).startswith("clocks: NVML absent")
    assert clocks.dropped(info, info) is None


def test_clocks_text_and_drop_warning():
    before = {"sm_clock_mhz": 1980, "sm_clock_max_mhz": 1980, "throttle": []}
    after = {"sm_clock_mhz": 1600, "sm_clock_max_mhz": 1980, "throttle": ["software power cap"]}
    line = clocks.describe(before, after)
    assert "1980 MHz" in line and "1600 MHz after" in line and "software power cap" in line
    assert "1980 MHz -> 1600 MHz" in clocks.dropped(before, after)
    assert clocks.dropped(before, dict(before, sm_clock_mhz=1950)) is None
    assert clocks.decode_throttle(0x1 | 0x4 | 0x40) == ["software power cap", "hardware thermal slowdown"]


# --- the report ------------------------------------------------------------------------------------------
def _report_with(samples, method):
    from lab.core.rows import row
    from lab.core.runner import Report

    rep = Report("vecadd", "c = a + b", "gpu", {"name": "GPU", "compute_capability": "9.0"}, (10,), "float32",
                 0, None, 5, 120, 10, stop_rule="adaptive", clocks={"before": {"error": "NVML absent"}})
    rep.rows = [row("numba", "quiet", "ok", measurement=T.Measurement([1.0, 1.0, 1.001, 0.999], method)),
                row("numba", "noisy", "ok", measurement=T.Measurement(samples, method))]
    return rep


def test_report_flags_noise_and_carries_timing_in_json():
    from lab.cli.views import report

    rep = _report_with([1.0, 1.5, 2.0, 1.2, 0.9], T.DEVICE_EVENTS)
    console = Console(record=True, width=220)
    report.print_table(rep, console)
    text = console.export_text()
    assert "noise ! = IQR/median above 10%: numba noisy" in text and "clocks: NVML absent" in text
    doc = json.loads(json.dumps(rep.to_dict(), default=str))
    quiet, noisy = doc["results"]
    assert quiet["noise"] < 0.01 and not quiet["noisy"] and noisy["noisy"]
    assert noisy["timing"].startswith("median of 5: CUDA events") and doc["stop_rule"] == "adaptive"


@pytest.mark.gpu
def test_lab_run_json_has_timing_and_noise(lab):
    code, out, err = lab("run", "vecadd", "--size", "300", "--threads", "64", "--json",
                         "--contenders", "numba,numpy", *(["--repeats", "2"] if SIMULATOR else []))
    assert code == 0, err
    doc = json.loads(out)
    for r in doc["results"]:
        assert r["timing"].startswith(f"median of {r['timed_calls']}: ") and r["noise"] >= 0
    if not SIMULATOR:
        assert doc["clocks"]["before"] and doc["clocks"]["after"]
        assert all(r["timed_calls"] >= 10 for r in doc["results"])


# --- on the GPU -------------------------------------------------------------------------------------------
def _vecadd(n):
    from kernels import vecadd
    from kernels.compiler import cuda

    a = cuda.to_device(np.random.default_rng(0).standard_normal(n).astype(np.float32))
    b = cuda.to_device(np.random.default_rng(1).standard_normal(n).astype(np.float32))
    c = cuda.device_array_like(a)
    launch = vecadd.vecadd_kernel[(n + 255) // 256, 256]
    return lambda: launch(a, b, c)


@pytest.mark.gpu
@needs_gpu
def test_blocking_kernel_works():
    info = T.blocking_kernel()
    print(info["why"])
    assert info["works"], info["why"]


@pytest.mark.gpu
@needs_gpu
def test_l2_resident_is_faster_without_the_flush():
    from kernels.compiler import cuda

    fn = _vecadd(1 << 20)  # 12 MB: fits the H100's 50 MB L2
    flushed = T.Timer(fn, "device", cuda.synchronize).measure(200, 5)
    hot = T.Timer(fn, "device", cuda.synchronize, flush_l2=False).measure(200, 5)
    print(f"L2-resident vecadd 2^20: {hot.median_ms * 1e3:.1f} us hot, {flushed.median_ms * 1e3:.1f} us flushed")
    assert hot.median_ms < flushed.median_ms


@pytest.mark.gpu
@needs_gpu
def test_a_call_that_synchronizes_is_reported_with_host_gaps():
    from kernels.compiler import cuda

    fn = _vecadd(1 << 16)

    def blocking():
        fn()
        cuda.synchronize()

    m = T.Timer(blocking, "device", cuda.synchronize).measure(20, 2)
    assert m.method == T.DEVICE_EVENTS_GAPS and m.host_gaps
    assert T.Timer(fn, "device", cuda.synchronize).measure(20, 2).method == T.DEVICE_EVENTS


@pytest.mark.gpu
@needs_gpu
def test_2000_repeats_do_not_overflow_the_launch_queue():
    import time

    from kernels.compiler import cuda

    t0 = time.perf_counter()
    m = T.Timer(_vecadd(1 << 16), "device", cuda.synchronize).measure(2000, 5)
    print(f"2000 calls in {time.perf_counter() - t0:.2f} s, median {m.median_ms * 1e3:.2f} us, noise {m.noise:.1%}")
    assert m.n == 2000 and m.method == T.DEVICE_EVENTS  # every batch covered: no host waited on a full queue


@pytest.mark.gpu
@needs_gpu
def test_back_to_back_contenders_agree_with_a_second_run():
    from kernels.compiler import cuda

    one, two = _vecadd(1 << 24), _vecadd(1 << 22)
    first = [T.Timer(f, "device", cuda.synchronize).measure() for f in (one, two)]
    second = [T.Timer(f, "device", cuda.synchronize).measure() for f in (one, two)]
    for a, b in zip(first, second):
        spread = 3 * max(a.iqr_ms, b.iqr_ms) + 0.02 * a.median_ms
        print(f"median {a.median_ms:.4f} vs {b.median_ms:.4f} ms (n {a.n}, {b.n}; noise {a.noise:.2%}, {b.noise:.2%})")
        assert abs(a.median_ms - b.median_ms) <= spread


@pytest.mark.gpu
@needs_gpu
def test_nvml_clocks_by_pci_bus_id():
    info = clocks.read()
    print(info)
    if "error" in info:
        assert "NVML" in info["error"]
        return
    with clocks.nvml_device() as (nvml, h):
        busid = nvml.nvmlDeviceGetPciInfo(h).busId
    busid = busid.decode() if isinstance(busid, bytes) else busid
    assert busid.upper().endswith(clocks.pci_bus_id()[-7:])
    assert 0 < info["sm_clock_mhz"] <= info["sm_clock_max_mhz"] * 1.01


def test_stop_criteria_are_named_in_the_run_schema():
    """Every named criterion is one the run document's results[].stop may hold, and no other; a
    Measurement gives its Stop as that object (None without one: the simulator's clock)."""
    import json
    from pathlib import Path

    schema = json.loads((Path(__file__).resolve().parents[2] / "docs" / "schemas" / "run.json").read_text())
    assert tuple(schema["$defs"]["result"]["properties"]["stop"]["properties"]["criterion"]["enum"]) == S.CRITERIA
    with pytest.raises(ValueError, match="criterion"):
        S.Stop("lucky", "stopped by luck")
    m = T.Measurement([1.0, 1.0], T.DEVICE_EVENTS, {"stop": S.Stop("fixed_count", "fixed count (2)", None, 2, 2, 0.5)})
    assert m.stop == {"criterion": "fixed_count", "noise": None, "threshold": 2, "samples": 2, "elapsed_s": 0.5}
    assert m.timing.endswith("fixed count (2)")
    stop = schema["$defs"]["result"]["properties"]["stop"]
    assert set(stop["properties"]) == set(m.stop) and set(stop["required"]) == {"criterion", "noise"}
    assert T.Measurement([1.0], T.SIMULATOR_CLOCK).stop is None
    import pickle  # a Row crosses processes pickled (lab.core.compile_child): its Stop keeps its name

    back = pickle.loads(pickle.dumps(m))
    assert back.stop == m.stop and back.timing == m.timing
