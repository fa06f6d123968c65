"""lab tune and the tuned configurations auto reads (lab.bench.tune, kernels.tuning): the tuner
checks every candidate before timing it, records failures without stopping, keeps to its budget,
writes the winners per shape class to the cache; auto then runs the cached configuration and says
so, and a corrupt cache is one warning and the heuristic. Also matmul's vector routing (M = 1,
N = 1) and the tunable parameters against the float64 reference. Tiny shapes in the simulator."""
import dataclasses
import json

import numpy as np
import pytest

import kernels
from kernels.gemm import config as GC
from kernels import tuning
from kernels.spec import Variant
from tests.conftest import SIMULATOR
from tests.helpers import fits, one_line_exit_2, run_variant

sim_only = pytest.mark.skipif(not SIMULATOR, reason="simulator-sized tuning runs")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty tuned cache of the test's own; tuned tables on."""
    monkeypatch.setenv("LAB_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("LAB_TUNED", raising=False)
    tuning.forget()
    yield tmp_path / "tuned.json"
    tuning.forget()


def test_shape_classes():
    assert tuning.shape_class((4096, 4096, 4096)) == "2^12x2^12x2^12"
    assert tuning.shape_class((1000, 1030, 517)) == "2^10x2^10x2^9"
    assert tuning.shape_class((1, 4096, 4096)) == "1x2^12x2^12"
    assert tuning.shape_class((4096, 1, 4096)) == "2^12x1x2^12"
    assert tuning.shape_class((2, 3)) == "2^1x2^2"
    assert tuning.shape_class((1000,)) == tuning.shape_class((1024,)) != tuning.shape_class((2048,))


@sim_only
def test_tune_picks_writes_and_auto_uses_the_cache(cache):
    """The search and its winners; in the simulator nothing goes to the cache (simulated times say
    nothing of a GPU, and must not change auto's later choices); the same winners, as a GPU run
    would save them (simulated false), go to the cache and auto uses them."""
    from lab.bench.tune import save, tune

    spec = kernels.load("vecadd")
    before = spec.variants["auto"].launch((1000,), 32).note
    doc = tune("vecadd", "simulator", ["300", "1000"], budget_s=60)
    assert doc["simulated"] and [r["shape_class"] for r in doc["shapes"]] == ["2^8", "2^10"]
    for r in doc["shapes"]:
        ok = [c for c in r["candidates"] if c["status"] == "ok"]
        assert r["winner"] and r["winner"]["ms"] == min(c["ms"] for c in ok)  # the fastest checked one
        assert r["candidates"][0]["heuristic"]
        assert len({c["threads"] for c in r["candidates"] if c["rung"] == r["winner"]["rung"]}) > 1
    assert doc["cache_path"] is None and not cache.exists()  # the simulator's search is shown, not cached
    assert spec.variants["auto"].launch((1000,), 32).note == before  # auto's choice did not change
    save([dict(e, simulated=True) for e in doc["entries"]])  # a simulated entry in the cache: never used
    assert spec.variants["auto"].launch((1000,), 32).note == before
    save([dict(e, simulated=False) for e in doc["entries"]])  # as a GPU's run saves them
    written = json.loads(cache.read_text())
    assert tuning.validate(written) and {e["shape_class"] for e in written["entries"]} == {"2^8", "2^10"}
    win = doc["shapes"][1]["winner"]
    cfg = spec.variants["auto"].launch((1000,), 32)
    assert cfg.rung == win["rung"] and cfg.threads_per_block == win["threads"] or cfg.rung == win["rung"]
    assert "tuned (cache)" in cfg.note and cfg.note.startswith(f"auto: {win['rung']}")
    # same class, another shape: tuned; another class: the heuristic
    assert "tuned (cache)" in spec.variants["auto"].launch((1100,), 32).note
    assert "heuristic" in spec.variants["auto"].launch((1 << 20,), 32).note
    # a second run's winners merge: the first run's classes stay
    save([dict(e, simulated=False) for e in tune("vecadd", "simulator", ["5"], budget_s=30)["entries"]])
    assert {e["shape_class"] for e in json.loads(cache.read_text())["entries"]} == {"2^8", "2^10", "2^2"}


@sim_only
def test_failing_candidates_are_recorded_and_skipped(cache, monkeypatch):
    """A rung that raises (as a compile error or too many resources would) and a rung that computes
    the wrong answer are recorded with their reasons; the search goes on and picks a checked one."""
    from lab.bench.tune import tune

    spec = kernels.load("vecadd")

    def boom(cfg, inputs, outputs):
        raise RuntimeError("CUDA_ERROR_OUT_OF_RESOURCES (simulated)")

    def wrong(cfg, inputs, outputs):
        a, b = inputs
        (c,) = outputs
        return lambda: c.copy_to_device(np.zeros(c.shape, c.dtype))

    launch = spec.variants["element_per_thread"].launch
    monkeypatch.setitem(spec.variants, "boom", Variant("boom", "raises", launch, boom))
    monkeypatch.setitem(spec.variants, "wrong", Variant("wrong", "zeros", launch, wrong))
    doc = tune("vecadd", "simulator", ["200"], budget_s=60, write=False)
    cands = doc["shapes"][0]["candidates"]
    assert {c["status"] for c in cands if c["rung"] == "boom"} == {"error"}
    assert all("OUT_OF_RESOURCES" in c["reason"] for c in cands if c["rung"] == "boom")
    assert {c["status"] for c in cands if c["rung"] == "wrong"} == {"FAIL"}
    assert doc["shapes"][0]["winner"]["rung"] not in ("boom", "wrong")
    assert doc["cache_path"] is None and not cache.exists()


@sim_only
def test_budget_is_kept(cache):
    from lab.bench.tune import tune

    doc = tune("matmul", "simulator", ["9x10x11", "1x20x30"], budget_s=0.01)
    first, second = doc["shapes"]
    assert first["heuristic"]["status"] == "ok"  # the baseline always runs
    assert all(c["status"] == "budget" for c in first["candidates"] if not c["heuristic"])
    assert second["status"] == "not tuned: budget spent" and second["winner"] is None
    assert doc["elapsed_s"] < 30


@sim_only
def test_corrupt_cache_is_one_warning_and_the_heuristic(cache, lab):
    cache.write_text("{ not json")
    spec = kernels.load("matmul")
    cfg = spec.variants["auto"].launch((1, 40, 70), 32)
    assert "heuristic" in cfg.note and "tuned" not in cfg.note
    assert len(tuning.problems()) == 1 and "unreadable" in tuning.problems()[0]
    code, out, err = lab("run", "matmul", "--sim", "--size", "1x40x70", "--variant", "auto",
                         "--contenders", "numba", env={"LAB_CACHE_DIR": str(cache.parent)})
    assert code == 0, err
    assert "Traceback" not in out + err and "unreadable" in out + err
    cache.write_text(json.dumps({"format": "lab-tuned-configs", "format_version": 1, "entries": [{"kernel": 3}]}))
    tuning.forget()  # (files are looked at again at most once a second; forget() drops what was read)
    assert "heuristic" in spec.variants["auto"].launch((1, 40, 70), 32).note and tuning.problems()


def test_shipped_table_applies_by_device_name(cache, tmp_path, monkeypatch):
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    name, cc = tuning.device()
    entry = {"device": "any", "compute_capability": cc, "compiler": tuning.compiler(), "kernel": "matmul",
             "shape_class": tuning.shape_class((1, 64, 64)), "rung": "vector", "threads": 64,
             "params": {"splits": 4}}
    doc = {"format": "lab-tuned-configs", "format_version": 1, "match": name[-6:], "entries": [entry]}
    (shipped / "t.json").write_text(json.dumps(doc))
    monkeypatch.setattr(tuning, "SHIPPED_DIR", shipped)
    cfg = kernels.load("matmul").variants["auto"].launch((1, 60, 70), 256)
    assert "tuned (shipped)" in cfg.note and cfg.threads_per_block == 64 and cfg.param["splits"] == 4
    doc["match"] = "no such GPU"
    (shipped / "t.json").write_text(json.dumps(doc) + " ")
    tuning.forget()
    assert "heuristic" in kernels.load("matmul").variants["auto"].launch((1, 60, 70), 256).note
    monkeypatch.setenv("LAB_TUNED", "0")
    assert tuning.lookup("matmul", (1, 60, 70)) is None


@pytest.mark.gpu
@pytest.mark.parametrize("size", [(1, 37, 300), (33, 1, 300), (1, 1, 50), (3, 5, 130)]
                         if SIMULATOR else [(1, 4096, 4096), (4096, 1, 4096), (1, 1, 70000), (1, 1000, 3001),
                                            (5, 300, 1000)])
def test_vector_routing_is_correct(size, rng, simulator, monkeypatch):
    """M = 1 and N = 1 run the vector rung (auto says "matvec rung"), checked against float64; the
    vector rung also stays correct at shapes that are not vector-shaped."""
    monkeypatch.setenv("LAB_TUNED", "0")
    spec = kernels.load("matmul")
    cfg = spec.variants["auto"].launch(size, 64)
    if 1 in size[:2]:
        assert cfg.rung == "vector" and "matvec rung" in cfg.note
    for v in ("auto", "vector"):
        ok, err, *_ = run_variant(spec, v, size, 64 if SIMULATOR else 256, rng, simulator=simulator)
        assert ok, f"{v} at {size}: {err}"


@pytest.mark.gpu
@pytest.mark.parametrize("rung,params", [("vector", {"splits": 3}), ("split_k", {"bm": 32, "bn": 32, "splits": 5}),
                                         ("register_tiled", {"bk": 8, "min_blocks": 1}),
                                         ("tile64", {"bm": 32, "bn": 128}),
                                         ("wide_loads", {"tile": "32x32x32", "splits": 2}),
                                         ("warp_tiled", {"tile": "32x64x16"}),
                                         ("warp_tiled", {"tile": "128x128x16-direct"}),
                                         ("wide_loads", {"tile": "128x32x16", "splits": 2}),
                                         ("wide_loads", {"tile": "32x64x16", "splits": 3})])
def test_tunable_parameters_stay_correct(rung, params, rng, simulator):
    spec = kernels.load("matmul")
    size = ((1, 45, 300) if rung == "vector" else (9, 40, 100) if rung == "split_k"
            else (20, 34, 140) if "splits" in params else (37, 45, 40))
    if params.get("tile", "").startswith("128x"):  # a tile at most twice the output (tuned_gemm_config)
        size = (70, size[1] if size[1] * 2 >= int(params["tile"].split("x")[1]) else 70, size[2])
    if not SIMULATOR:
        size = tuple(d * 7 + 3 for d in size)
    v = spec.variants[rung]
    cfg = v.configure(size, 64, params)
    bound = dataclasses.replace(v, launch=lambda s, t: cfg)
    spec2 = dataclasses.replace(spec, variants={**spec.variants, rung: bound})  # a spec names only its own rungs
    ok, err, *_ = run_variant(spec2, rung, size, 64, rng, simulator=simulator)
    assert ok, f"{rung} {params} at {size}: {err}"
    with pytest.raises(ValueError):
        v.configure(size, 64, {"no_such_parameter": 1})


def test_matmul_search_space_has_tiles_splits_and_stages():
    """lab tune searches the gemm rungs' block tiles (GEMM_TILES: 32x32 to 256x128, slabs of 8-32,
    one or two shared buffers) and split-K factors, and leaves out what cannot pay at the shape."""
    from lab.bench.tune import candidates

    spec = kernels.load("matmul")
    big = candidates(spec, (4096, 4096, 4096))
    tiles = {c.params.get("tile") for c in big if c.rung == "wide_loads"}
    assert {"256x128x8", "128x128x16-sb", "64x128x16", "32x32x32"} <= tiles
    assert not any(c.params.get("splits", 1) > 1 for c in big if c.rung in ("warp_tiled", "wide_loads"))  # SMs full
    long_k = candidates(spec, (64, 64, 65536))
    split = {(c.params.get("tile"), c.params.get("splits")) for c in long_k if c.rung == "wide_loads"}
    assert ("64x64x16", 128) in split and ("32x32x32", 64) in split
    assert not any(t == "256x128x8" for t, _ in split)  # a tile over twice the output
    for name, cfg in GC.GEMM_TILES.items():
        cfg.derived()
        launch = spec.variants["warp_tiled"].configure((300, 300, 300), 128, {"tile": name})
        assert launch.block == (cfg.threads,) and launch.param == {"tile": name}
    with pytest.raises(ValueError, match="one of 128x128x16"):
        spec.variants["wide_loads"].configure((300, 300, 300), 128, {"tile": "100x100x10"})


@sim_only
def test_cli_json_text_and_bad_input(cache, lab):
    from tests.cli.test_schemas import validate

    env = {"LAB_CACHE_DIR": str(cache.parent)}

    def bad(needle, *args):
        code, out, err = lab(*args, env=env)
        one_line_exit_2(code, err, needle)
    code, out, err = lab("tune", "vecadd", "--sim", "--shapes", "64", "--budget", "30", "--json", env=env)
    assert code == 0, err
    doc = validate(json.loads(out), "tune.json")
    assert doc["entries"] and err == "" and doc["cache_path"] is None and not cache.exists()  # simulated: not cached
    from jsonschema import Draft202012Validator
    from tests.cli.test_schemas import REGISTRY, SCHEMAS

    table = tmp = cache.parent / "h.json"
    code, out, err = lab("tune", "vecadd", "--sim", "--shapes", "64", "--budget", "30", "--out", str(table),
                         "--match", "simulator", env=env)
    assert code == 0, err
    fits(out)
    assert "lab tune vecadd" in out and "simulated" in out and json.loads(tmp.read_text())["match"] == "simulator"
    Draft202012Validator(json.loads((SCHEMAS / "tune-cache.json").read_text()),
                         registry=REGISTRY).validate(json.loads(tmp.read_text()))
    bad("--budget", "tune", "vecadd", "--sim", "--budget", "0")
    bad("--out", "tune", "vecadd", "--sim", "--match", "H100")
    bad("malformed", "tune", "vecadd", "--sim", "--shapes", "2x3")
    bad("does not exist", "tune", "vecadd", "--sim", "--out", str(cache.parent / "no" / "x.json"))
    bad("unknown kernel", "tune", "nosuch", "--sim")
    # a search the simulator would spend hours on is refused before it starts, naming tune's own options
    code, out, err = lab("tune", "matmul", "--sim", "--shapes", "2048x2048x2048", "--budget", "100000", env=env)
    one_line_exit_2(code, err, "--yes")
    assert "--shapes" in err and "--budget" in err


@pytest.mark.parametrize("path", tuning.shipped_paths() or [None], ids=lambda p: getattr(p, "name", "none"))
def test_shipped_tables_are_valid(path):
    """Every committed table (kernels/tuned/*.json, filled on a GPU by scripts/gpu_tune_check.sh)
    follows docs/schemas/tune-cache.json and names a device text to match."""
    if path is None:
        pytest.skip("no shipped table")
    from jsonschema import Draft202012Validator
    from tests.cli.test_schemas import REGISTRY, SCHEMAS

    doc = json.loads(path.read_text())
    Draft202012Validator(json.loads((SCHEMAS / "tune-cache.json").read_text()), registry=REGISTRY).validate(doc)
    assert tuning.validate(doc) is not None and doc["match"]
    for e in doc["entries"]:
        spec = kernels.load(e["kernel"])
        if e["rung"] == tuning.HEURISTIC_RUNG:  # the heuristic won the class: nothing to configure
            assert e["threads"] == 0 and not e["params"]
            continue
        assert e["rung"] in spec.variants and set(e["params"]) <= set(spec.variants[e["rung"]].tunables)


@pytest.mark.gpu
@pytest.mark.skipif(SIMULATOR, reason="tunes on a GPU (the simulator's tuning is tested above)")
def test_tune_on_the_gpu(cache):
    """lab tune on a GPU within its budget: a checked winner per shape, no slower than the heuristic
    (it is among the candidates), written to the cache, and auto then runs it."""
    import time

    from lab.bench.tune import tune

    t0 = time.monotonic()
    doc = tune("matmul", "gpu", ["1x4096x4096", "4096x1x4096", "512"], budget_s=40)
    assert time.monotonic() - t0 < 40 + 30  # the budget, plus the reference of each shape and one candidate
    for r in doc["shapes"]:
        heur = r["heuristic"]
        assert heur["status"] == "ok", f"{r['size']}: the heuristic's {heur['rung']}: {heur['status']}: {heur['reason']}"
        assert r["winner"] and r["winner"]["ms"] <= heur["ms"]
    cfg = kernels.load("matmul").variants["auto"].launch((1, 4096, 4096), 256)
    assert "tuned (cache)" in cfg.note
    assert cfg.rung != "vector" or "matvec rung: M = 1" in cfg.note


def test_a_class_the_heuristic_wins_keeps_the_heuristic(cache):
    """winners(): the heuristic's per-shape choice competes as one configuration; where it is the
    fastest over the class's shapes, the entry's rung is "heuristic" and auto says so."""
    from lab.bench.tune import winners

    def cand(rung, ms, **params):
        return {"rung": rung, "threads": 64, "params": params, "status": "ok", "ms": ms}

    def row(size, heur_ms, fixed_ms):  # the heuristic picks a different tile at each shape
        heur = cand("wide_loads", heur_ms, tile=f"t{size[0]}")
        cands = [dict(heur, heuristic=True), cand("small", fixed_ms)]
        return {"size": list(size), "shape_class": tuning.shape_class(size), "candidates": cands, "heuristic": heur,
                "winner": min(cands, key=lambda c: c["ms"])}

    dev = ("NVIDIA H100 80GB HBM3", "9.0")
    rows = [row((1024, 1024, 1024), 0.075, 0.089), row((777, 1333, 901), 0.078, 0.101)]
    (entry,) = winners("matmul", rows, dev, "numba-cuda", False)
    assert entry["rung"] == tuning.HEURISTIC_RUNG and entry["threads"] == 0 and entry["ms"] == 0.075
    # a fixed configuration faster at both shapes wins the class as before
    rows = [row((1024, 1024, 1024), 0.075, 0.070), row((777, 1333, 901), 0.078, 0.077)]
    assert winners("matmul", rows, dev, "numba-cuda", False)[0]["rung"] == "small"
    # auto reads such an entry as "use the heuristic", and says the class was tuned (an entry as a
    # GPU run writes it: a simulated one is never used)
    (entry,) = winners("matmul", [row((24, 20, 18), 0.01, 0.02)], (tuning.device()[0], tuning.device()[1]),
                       tuning.compiler(), False)
    cache.write_text(json.dumps({"format": tuning.FORMAT, "format_version": tuning.FORMAT_VERSION, "entries": [entry]}))
    tuning.forget()
    note = kernels.load("matmul").variants["auto"].launch((24, 20, 18), 64).note
    assert "tuned (cache) for class 2^5x2^4x2^4: the heuristic; heuristic: launch model" in note
