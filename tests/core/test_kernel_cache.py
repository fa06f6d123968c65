"""The compiled-kernel cache (kernels.cache): its key, its folder, generated sources, the jit wrapper.

On a GPU both compilers cache through Numba's machinery (``cache=True``); here, without one, the
lab's parts are tested directly, and Numba's CPU cache (the same locator and index code) shows that a
generated source compiled twice in fresh function objects is found again, and missed once edited.
"""
import inspect
import os
import shutil
from pathlib import Path

import pytest

from kernels import cache


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv(cache.ENV, raising=False)
    monkeypatch.delenv(cache.NUMBA_ENV, raising=False)
    monkeypatch.delenv(cache._OURS, raising=False)
    for k in cache.STATS:
        monkeypatch.setitem(cache.STATS, k, 0)
    monkeypatch.setattr(cache, "_READY", [False])
    return tmp_path / "c"


def test_sources_key_is_stable_and_changes_with_any_kernel_file(tmp_path):
    pkg = tmp_path / "kernels"
    shutil.copytree(cache.PACKAGE, pkg, ignore=shutil.ignore_patterns("__pycache__", "*.json"))
    key = cache.sources_key(pkg)
    assert key == cache.sources_key(pkg) == cache.sources_key(cache.PACKAGE) and len(key) == 16
    (pkg / "warp.py").write_text((pkg / "warp.py").read_text() + "\n# a device function changed\n")
    edited = cache.sources_key(pkg)
    assert edited != key
    (pkg / "new_rung.py").write_text("X = 1\n")
    assert cache.sources_key(pkg) not in (key, edited)


def test_folder_per_compiler_version_and_sources(tmp_cache):
    a = cache.directory("numba-cuda", "0.30.4")
    b = cache.directory("numba-cuda-mlir", "0.6.0")
    assert a.parent.name == "numba-cuda-0.30.4" and b.parent.name == "numba-cuda-mlir-0.6.0"
    assert a.name == b.name == cache.sources_key() and a.is_relative_to(tmp_cache / "kernels")


def test_configure_sets_numba_cache_dir_respects_the_user_and_turns_off(tmp_cache, monkeypatch):
    got = cache.configure("numba-cuda", "0.30.4")
    assert got == os.environ[cache.NUMBA_ENV] and Path(got).is_dir() and cache.location() == got
    # a child process of the other compiler inherits the lab's value: it is replaced, not shared
    other = cache.configure("numba-cuda-mlir", "0.6.0")
    assert other != got and "numba-cuda-mlir-0.6.0" in other
    monkeypatch.setenv(cache.NUMBA_ENV, str(tmp_cache / "mine"))  # the user's own: kept
    assert cache.configure("numba-cuda", "0.30.4") == str(tmp_cache / "mine")
    monkeypatch.setenv(cache.ENV, "0")
    assert not cache.enabled() and cache.configure("numba-cuda", "0.30.4") is None and cache.location() is None


def test_an_unwritable_cache_folder_turns_the_cache_off(tmp_cache, monkeypatch):
    """A child process that inherited the lab's folder but cannot write its own (a read-only
    home): no cache, and the inherited NUMBA_CACHE_DIR is dropped, not written into."""
    cache.configure("numba-cuda", "0.30.4")
    blocker = tmp_cache.parent / "file"
    blocker.write_text("")
    monkeypatch.setenv("LAB_CACHE_DIR", str(blocker))  # a file: no folder can be made under it
    assert cache.configure("numba-cuda", "0.30.4") is None
    assert cache.NUMBA_ENV not in os.environ and cache.location() is None
    assert cache.caching_jit(fake_jit)(kernel).options == {}


def test_the_sandbox_child_caches_nothing(tmp_path):
    from lab.teach.contained.sandbox import prepare

    src = tmp_path / "sub.py"
    src.write_text("x = 1\n")
    private, _, env = prepare(src, dict(os.environ))
    shutil.rmtree(private, ignore_errors=True)
    assert env[cache.ENV] == "0"


def test_old_source_folders_are_pruned(tmp_cache):
    base = cache.root() / "numba-cuda-1"
    for i in range(5):
        (base / f"old{i}").mkdir(parents=True)
        os.utime(base / f"old{i}", (i, i))
    folder = Path(cache.configure("numba-cuda", "1"))
    kept = sorted(p.name for p in base.iterdir())
    assert folder.name in kept and len(kept) == cache.KEEP and {"old4", "old3"} <= set(kept)
    path, size, files = cache.usage()
    assert path == cache.root() and files == 0 and size == 0


GEN = "def scale_{k}(x):\n    return x * {k}\n"


def test_generated_source_gets_one_file_per_text(tmp_cache):
    ns = cache.exec_generated(GEN.format(k=3), {}, tag="gemm tile")
    f = ns["scale_3"]
    path = f.__code__.co_filename
    assert os.path.isfile(path) and Path(path).read_text() == GEN.format(k=3) and "gemm_tile_" in path
    assert f(2) == 6 and inspect.getsource(f).startswith("def scale_3")
    mtime = os.stat(path).st_mtime_ns
    again = cache.exec_generated(GEN.format(k=3), {}, tag="gemm tile")["scale_3"]
    assert again.__code__.co_filename == path and os.stat(path).st_mtime_ns == mtime  # not rewritten
    assert cache.exec_generated(GEN.format(k=4), {})["scale_4"].__code__.co_filename != path
    assert cache.cacheable(f)


def test_generated_source_without_a_cache_still_has_source(tmp_cache, monkeypatch):
    monkeypatch.setenv(cache.ENV, "off")
    f = cache.exec_generated(GEN.format(k=5), {})["scale_5"]
    assert f(2) == 10 and not cache.cacheable(f) and inspect.getsource(f).startswith("def scale_5")


def test_numba_finds_a_generated_kernel_again_and_misses_an_edited_one(tmp_cache, monkeypatch):
    """Numba's own cache (CPU target: the same locator and index as CUDA's) on generated sources:
    a second function object from the same text loads; another text compiles."""
    numba = pytest.importorskip("numba")
    from numba.core import config

    cache.configure("test", "0")
    monkeypatch.setattr(config, "CACHE_DIR", os.environ[cache.NUMBA_ENV])
    src = GEN.format(k=7)
    first = numba.njit(cache=True)(cache.exec_generated(src, {})["scale_7"])
    assert first(3) == 21 and first.stats.cache_misses
    second = numba.njit(cache=True)(cache.exec_generated(src, {})["scale_7"])
    assert second(3) == 21 and sum(second.stats.cache_hits.values()) == 1
    third = numba.njit(cache=True)(cache.exec_generated(src.replace("* 7", "* 8"), {})["scale_7"])
    assert third(3) == 24 and not third.stats.cache_hits


# --- the jit wrapper, with a stand-in compiler ---------------------------------------------------
class FakeCache:
    def __init__(self, fail=False):
        self.fail, self.saved = fail, []

    def load_overload(self, sig, ctx):
        if self.fail:
            raise OSError("read-only")
        return None

    def save_overload(self, sig, data):
        if self.fail:
            raise RuntimeError("Cannot pickle CUDACodeLibrary with linking files")
        self.saved.append(sig)


class FakeDispatcher:
    def __init__(self, func, options):
        self.py_func, self.options = func, options
        self._cache = FakeCache(fail=options.get("fail", False)) if options.get("cache") else None


def fake_jit(func_or_sig=None, **options):
    if callable(func_or_sig):
        if options.get("cache") and options.get("no_locator"):
            raise RuntimeError("cannot cache function 'k': no locator available")
        return FakeDispatcher(func_or_sig, options)
    return lambda func: fake_jit(func, **options)


def kernel(a):
    a[0] = 1


def test_caching_jit_adds_cache_to_kernels_only(tmp_cache):
    jit = cache.caching_jit(fake_jit)
    assert jit(kernel).options == {}  # no folder configured yet: nothing cached
    cache.configure("numba-cuda", "0.30.4")
    assert cache.caching_jit(jit) is jit
    assert jit(kernel).options == {"cache": True}  # @cuda.jit
    assert jit(lineinfo=True)(kernel).options == {"lineinfo": True, "cache": True}  # @cuda.jit(...)
    assert jit(kernel, lineinfo=True).options == {"lineinfo": True, "cache": True}
    assert jit(device=True)(kernel).options == {"device": True}  # device functions: unchanged
    assert jit(cache=False)(kernel).options == {"cache": False}  # the author's choice stands
    gen = {}
    exec("def k(a):\n    a[0] = 2\n", gen)  # no file: not cacheable
    assert jit(gen["k"]).options == {}


def test_caching_jit_never_fails_a_kernel(tmp_cache, monkeypatch):
    cache.configure("numba-cuda", "0.30.4")
    jit = cache.caching_jit(fake_jit)
    assert jit(no_locator=True)(kernel).options == {"no_locator": True}  # compiled without a cache
    d = jit(fail=True)(kernel)
    assert d._cache.load_overload("sig", None) is None
    d._cache.save_overload("sig", object())
    assert cache.STATS["errors"] == 3
    ok = jit(kernel)
    assert ok._cache.load_overload("sig", None) is None and cache.STATS["misses"] == 1
    ok._cache.save_overload("sig", object())
    assert ok._cache.saved == ["sig"] and cache.STATS["saved"] == 1
    monkeypatch.setenv(cache.ENV, "0")
    assert jit(kernel).options == {}


def test_ptxas_spill_reports_are_remembered_per_ptx_and_arch(tmp_cache, monkeypatch):
    from lab.core import compilers

    calls = []
    monkeypatch.setattr(compilers, "nvjitlink_log", lambda code, arch, lto=False: calls.append(arch) or
                        "info : used 8 registers, 0 stack, 0 bytes smem\n12 bytes spill stores, 4 bytes spill loads")
    assert compilers._ptxas_spills("// ptx a", (9, 0)) == 16 and compilers._ptxas_spills("// ptx a", (9, 0)) == 16
    assert calls == ["sm_90"]  # the second answer came from the cache
    assert compilers._ptxas_spills("// ptx a", (8, 0)) == 16 and compilers._ptxas_spills("// ptx b", (9, 0)) == 16
    assert calls == ["sm_90", "sm_80", "sm_90"]
    monkeypatch.setenv(cache.ENV, "0")
    compilers._ptxas_spills("// ptx a", (9, 0))
    assert len(calls) == 4
