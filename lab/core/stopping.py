"""When the timer stops sampling: named stop criteria in nvbench's manner, and why it stopped.

nvbench stops a measurement by a *stopping criterion* chosen by name, with named parameters
(``--stopping-criterion stdrel --max-noise 0.5 --min-time 0.5``). Here each criterion is a
:class:`Criterion` of that kind (:data:`CRITERIA`: its name, the :class:`StopRule` field that is its
threshold, and its test), and the rule tests them in order; the first that is met stops sampling and
is reported as a :class:`Stop`: the phrase ``lab run`` prints, and the structured reason ``lab run
--json`` puts in ``results[].stop`` (the criterion, the noise then, its threshold, the samples and the
seconds of sampling).

How many calls: a stop rule like nvbench's (:class:`StopRule`): at least 10 samples and at least
0.25 s of summed GPU time, and more while the noise (IQR / median) is above 1% and still changing,
up to a time limit; ``repeats`` fixes the count instead. "Still changing" is nvbench's convergence
test (``stdrel_criterion``): a noise that has settled above the target (the noise of the samples up
to each of the last 8 checkpoints, 64 calls apart, within 5% of the current one) would not come
down with more calls; the median of the hundreds of samples taken is then as good as it gets.

CPU rows (host mode: NumPy, timed with ``time.perf_counter``) have one more way to stop, since their
noise is the operating system's and the CPU's (thread wake-ups, frequency changes), which neither
settles nor falls below 1% on a loaded host: once the median's 95% confidence interval is within
``host_median_ci`` (2%) of it. The interval is distribution-free (the order statistics at ranks
n/2 -+ 1.96 sqrt(n)/2, the binomial interval of the median: Conover, Practical Nonparametric
Statistics, the quantile test), so it holds whatever the shape of the spread, for calls independent of each
other; a CPU whose speed drifts during the row makes it too narrow. The reported statistic is the
same median, the stop reason says how well it is known (``meta["stop"]``: "median within ±1.8%
(95% interval) ..."), and the noise flag (``noisy``, above 10%) still marks a spread-out row. A
1.6 ms NumPy call with 20% noise stops after 300-500 calls instead of settling after 500-1,200;
the GPU rows never use this test.

Source: NVIDIA nvbench, "Stopping criteria" (``stdrel``: max noise and min time; the convergence
test of ``stdrel_criterion``); Conover, Practical Nonparametric Statistics (the median's interval).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Callable

import numpy as np

MEDIAN_Z = 1.96  # the median's interval in the host rule: 95% (two-sided normal quantile)


def noise_of(samples_ms) -> float:
    q1, med, q3 = np.percentile(samples_ms, [25, 50, 75])
    return float((q3 - q1) / med) if med > 0 else math.inf


def median_halfwidth(samples_ms, z: float = MEDIAN_Z) -> float:
    """Half the width of the median's distribution-free confidence interval, relative to the median:
    the order statistics at ranks n/2 - z sqrt(n)/2 and 1 + n/2 + z sqrt(n)/2 (1-based, clipped to
    1..n; the normal approximation of the binomial interval; z = 1.96: 95%) for independent calls.
    inf for fewer than 3 samples or a zero median."""
    n = len(samples_ms)
    if n < 3:
        return math.inf
    x = np.sort(np.asarray(samples_ms, dtype=np.float64))
    lo = max(1, math.floor(n / 2 - z * math.sqrt(n) / 2))
    hi = min(n, math.ceil(1 + n / 2 + z * math.sqrt(n) / 2))
    med = float(np.median(x))
    return float((x[hi - 1] - x[lo - 1]) / 2 / med) if med > 0 else math.inf


class Stop(str):
    """Why sampling stopped: the phrase of ``lab run``'s method line (a ``str``) and the structured
    reason (:meth:`as_dict`, ``results[].stop`` of ``lab run --json``): the named criterion that stopped
    it (:data:`CRITERIA`), the noise then (IQR / median; None for a fixed count), the criterion's
    threshold (its StopRule parameter: the count, seconds, or a relative noise or interval), the
    samples taken and the seconds of sampling."""

    criterion: str
    noise: float | None
    threshold: float | None
    samples: int
    elapsed_s: float

    def __new__(cls, criterion: str, text: str, noise: float | None = None, threshold: float | None = None,
                samples: int = 0, elapsed_s: float = 0.0):
        if criterion not in CRITERIA:
            raise ValueError(f"stop criterion {criterion!r}: one of {', '.join(CRITERIA)}")
        s = super().__new__(cls, text)
        s.criterion, s.noise, s.threshold, s.samples, s.elapsed_s = criterion, noise, threshold, samples, elapsed_s
        return s

    def __getnewargs__(self):  # pickled with its Row (lab.core.compile_child's fallback child)
        return self.criterion, str(self), self.noise, self.threshold, self.samples, self.elapsed_s

    def as_dict(self) -> dict:
        return {"criterion": self.criterion, "noise": self.noise, "threshold": self.threshold,
                "samples": self.samples, "elapsed_s": round(self.elapsed_s, 6)}


@dataclass
class State:
    """What a criterion looks at: the samples (ms), the seconds since sampling began, whether this test
    may run the costly checks (``settle``), whether the row is a CPU one (``host``); the noise computed
    once, when a criterion first asks."""

    samples_ms: list
    elapsed_s: float
    settle: bool = True
    host: bool = False
    _noise: float | None = None

    @property
    def n(self) -> int:
        return len(self.samples_ms)

    @property
    def noise(self) -> float:
        if self._noise is None:
            self._noise = noise_of(self.samples_ms)
        return self._noise


@dataclass(frozen=True)
class Criterion:
    """A named stop criterion: ``name``; ``parameter``, the StopRule field that is its threshold; and
    ``met(rule, state) -> phrase or None``. The adaptive criteria are asked only once the rule's
    minimum count is reached, and all but ``time_limit`` only once its minimum measured time is."""

    name: str
    parameter: str
    met: Callable[[StopRule, State], str | None]
    needs_min_time: bool = True


def _fixed_count(rule, s):
    return f"fixed count ({rule.repeats})" if s.n >= rule.repeats else None


def _time_limit(rule, s):
    return f"time limit {rule.time_limit_s:g} s reached at noise {s.noise:.1%}" if s.elapsed_s >= rule.time_limit_s else None


def _max_noise(rule, s):
    return (f"stopped at noise {s.noise:.1%} <= {rule.max_noise:.0%} after >= {rule.min_time_s:g} s"
            if s.noise <= rule.max_noise else None)


def _noise_settled(rule, s):
    if not (s.settle and rule.settled(s.samples_ms)):
        return None
    return (f"noise settled at {s.noise:.1%} (> {rule.max_noise:.0%}; within {rule.settle_spread:.0%} over the "
            f"last {rule.settle_calls} calls) after >= {rule.min_time_s:g} s")


def _median_interval(rule, s):
    if not (s.settle and s.host and rule.host_median_ci):
        return None
    half = median_halfwidth(s.samples_ms)
    return (f"median within ±{half:.1%} (95% interval, <= ±{rule.host_median_ci:.0%}) at noise {s.noise:.1%} "
            f"after >= {rule.min_time_s:g} s") if half <= rule.host_median_ci else None


# The named stop criteria, in the order StopRule.done tests them: a fixed count (--repeats N); the
# wall-clock limit; the noise at or below max_noise; the noise settled (nvbench's convergence); a CPU
# row's median known within host_median_ci.
ADAPTIVE = (Criterion("time_limit", "time_limit_s", _time_limit, needs_min_time=False),
            Criterion("max_noise", "max_noise", _max_noise),
            Criterion("noise_settled", "settle_spread", _noise_settled),
            Criterion("median_interval", "host_median_ci", _median_interval))
FIXED = Criterion("fixed_count", "repeats", _fixed_count, needs_min_time=False)
CRITERIA = (FIXED.name, *(c.name for c in ADAPTIVE))


@dataclass
class StopRule:
    """When to stop sampling, like nvbench's stopping criteria (each named in :data:`CRITERIA`).

    Adaptive (``repeats`` None): at least ``min_samples`` samples and ``min_time_s`` of summed
    measured time; then stop once the noise (IQR / median) is at most ``max_noise``, or when
    ``time_limit_s`` of wall clock has passed since sampling began (with at least ``min_samples``),
    or once the noise has settled (``settle_calls``). A CPU row (``done(..., host=True)``) also stops
    once the median's 95% interval is within ``host_median_ci`` of it (:func:`median_halfwidth`).
    Fixed (``repeats`` = N): exactly N samples.
    """

    repeats: int | None = None
    min_samples: int = 10
    min_time_s: float = 0.25
    max_noise: float = 0.01
    time_limit_s: float = 3.0
    settle_calls: int = 512  # the convergence window (nvbench's); 0: sample a noisy call up to the time limit
    settle_spread: float = 0.05  # settled: the window's noises within this of the current one (RMS, relative)
    host_median_ci: float = 0.02  # CPU rows: stop once the median's 95% interval is within this of it; 0: off

    def describe(self, warmup: int) -> str:
        """The adaptive rule in words (``lab run``'s header line "timed calls: ...")."""
        settle = (f" and still changing (settled: within {self.settle_spread:.0%} over the last "
                  f"{self.settle_calls} calls)" if self.settle_calls else "")
        host = (f"; CPU rows also stop once the median's 95% interval is within ±{self.host_median_ci:.0%}"
                if self.host_median_ci else "")
        return (f"each row: at least {self.min_samples} calls and {self.min_time_s:g} s of measured time, "
                f"more while the noise (IQR/median) is above {self.max_noise:.0%}{settle}, at most "
                f"{self.time_limit_s:g} s{host}; {warmup} warm-up")

    def done(self, samples_ms, elapsed_s: float, settle: bool = True, host: bool = False) -> Stop | None:
        """None to go on, else the reason sampling stops: the :class:`Stop` of the first criterion met.
        ``settle``: test the noise's convergence (and a CPU row's median interval) this time (a
        caller that asks after every call asks every 16th: it costs 8 noise estimates). ``host``: a
        CPU row, which may also stop on its median's interval (``host_median_ci``)."""
        state = State(list(samples_ms), elapsed_s, settle, host)
        if self.repeats is not None:
            criteria = (FIXED,)
        elif state.n < self.min_samples:
            return None
        else:
            timed = sum(samples_ms) >= self.min_time_s * 1e3
            criteria = tuple(c for c in ADAPTIVE if timed or not c.needs_min_time)
        for c in criteria:
            text = c.met(self, state)
            if text:
                noise = None if c is FIXED else state.noise
                return Stop(c.name, text, noise, getattr(self, c.parameter), state.n, elapsed_s)
        return None

    def settled(self, samples_ms) -> bool:
        """Whether the noise has stopped changing (nvbench's convergence test): the noise of the
        samples up to each of 8 checkpoints ``settle_calls / 8`` calls apart, ending now, has an RMS
        distance from the current noise below ``settle_spread`` of it. Needs ``settle_calls`` calls
        past the minimum count."""
        n, step = len(samples_ms), self.settle_calls // 8
        if not self.settle_calls or n < self.min_samples + self.settle_calls:
            return False
        noises = np.array([noise_of(samples_ms[: n - k * step]) for k in range(8)])
        current = noises[0]
        if not (np.isfinite(noises).all() and current > 0):
            return False
        return float(np.sqrt(np.mean((noises - current) ** 2)) / current) < self.settle_spread

    def batch(self, samples_ms, call_ms: float, cap: int) -> int:
        """How many calls to take next (1..cap): enough for the sample and time minimums, or for
        the count fixed; while only the noise is missing, a quarter more than taken so far."""
        n = len(samples_ms)
        if self.repeats is not None:
            want = self.repeats - n
        else:
            by_time = math.ceil((self.min_time_s * 1e3 - sum(samples_ms)) / max(call_ms, 1e-4))
            want = max(self.min_samples - n, by_time, n // 4, 1)
        return int(min(max(want, 1), cap))


