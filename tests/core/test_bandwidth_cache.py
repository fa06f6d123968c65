"""The measured copy bandwidth, remembered per device (lab.core.device.copy_bandwidth), on a fake
measurement: a hit within the age limit, a miss after it, one entry per device key, ``fresh`` and
$LAB_BANDWIDTH_CACHE=0 always measuring, and the header's words for its age. No GPU needed."""
import json

import pytest

from lab.core import device as D


@pytest.fixture
def measured(monkeypatch, tmp_path):
    """A fake measure_copy_bandwidth that counts its calls (each call a new number), and an empty cache."""
    monkeypatch.setenv("LAB_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(D.BANDWIDTH_CACHE_ENV, raising=False)
    calls = []

    def fake():
        calls.append(1)
        return {"gbps": 3000.0 + len(calls), "bytes": 1 << 30, "median_ms": 0.7}

    monkeypatch.setattr(D, "measure_copy_bandwidth", fake)
    return calls


def test_remembered_within_the_age_limit_then_measured_again(measured):
    first = D.copy_bandwidth(key="H100 uuid-1", now=1000.0)
    assert first["gbps"] == 3001.0 and first["cached"] is False and first["age_s"] == 0.0
    assert first["measured_at"] == "1970-01-01T00:16:40+00:00"
    again = D.copy_bandwidth(key="H100 uuid-1", now=1000.0 + 3600)
    assert again["gbps"] == 3001.0 and again["cached"] is True and again["age_s"] == 3600
    assert again["measured_at"] == first["measured_at"] and len(measured) == 1
    late = D.copy_bandwidth(key="H100 uuid-1", now=1000.0 + D.BANDWIDTH_MAX_AGE_S + 1)
    assert late["gbps"] == 3002.0 and late["cached"] is False and len(measured) == 2


def test_keyed_by_device(measured):
    a = D.copy_bandwidth(key="uuid-a", now=10.0)
    b = D.copy_bandwidth(key="uuid-b", now=20.0)
    assert (a["gbps"], b["gbps"]) == (3001.0, 3002.0) and len(measured) == 2
    assert D.copy_bandwidth(key="uuid-a", now=30.0)["gbps"] == 3001.0  # each device its own entry
    assert D.copy_bandwidth(key="uuid-b", now=30.0)["gbps"] == 3002.0 and len(measured) == 2
    doc = json.loads(D.bandwidth_cache_file().read_text())
    assert set(doc) == {"uuid-a", "uuid-b"}


def test_fresh_and_the_switch_always_measure(measured, monkeypatch):
    D.copy_bandwidth(key="k", now=0.0)
    fresh = D.copy_bandwidth(key="k", now=1.0, fresh=True)  # lab device --measure
    assert fresh["cached"] is False and len(measured) == 2
    assert D.copy_bandwidth(key="k", now=2.0)["gbps"] == fresh["gbps"]  # ... and it is what is remembered now
    monkeypatch.setenv(D.BANDWIDTH_CACHE_ENV, "0")
    assert D.copy_bandwidth(key="k", now=3.0)["cached"] is False and len(measured) == 3


def test_a_future_or_broken_entry_is_not_used(measured):
    D.bandwidth_cache_file().parent.mkdir(parents=True, exist_ok=True)
    D.bandwidth_cache_file().write_text("{not json")
    assert D.copy_bandwidth(key="k", now=100.0)["cached"] is False  # unreadable: measured, file rewritten
    assert D.copy_bandwidth(key="k", now=50.0)["cached"] is False  # measured "in the future": clock moved back
    assert len(measured) == 2


def test_the_key_names_device_driver_and_clocks():
    info = {"uuid": "GPU-1", "name": "H100", "driver": 13000, "driver_version": "580.1", "sm_clock_khz": 1980000,
            "memory_clock_khz": 2619000, "memory_bus_width_bits": 5120}
    key = D.bandwidth_key(info)
    assert key and "GPU-1" in key and "580.1" in key
    for change in ({"uuid": "GPU-2"}, {"driver_version": "580.2"}, {"memory_clock_khz": 1593000},
                   {"sm_clock_khz": 1755000}):
        assert D.bandwidth_key(info | change) != key
    assert D.bandwidth_key(info | {"uuid": None}) is None  # no UUID: nothing is remembered


def test_header_words():
    assert D.measured_when({"gbps": 1.0}) == "measured"
    assert D.measured_when({"measured_at": "1970-01-01T00:16:40+00:00"}) == "measured 1970-01-01 00:16 UTC"
