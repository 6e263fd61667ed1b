"""HeapTrim (serving/runners/heap_trim.py) with a fake C library and a fake RSS:
it trims only when the process's RSS moved past the threshold since its last
trim, either way, and the arenas hold that much free; its reference is what the
last trim left."""

from types import SimpleNamespace

from serving.runners import heap_trim
from serving.runners.heap_trim import HeapTrim, glibc

MB = 1 << 20


class FakeLibc:
    def __init__(self, rss: list[int]):
        self.free = 0
        self.rss = rss
        self.trimmed = 0
        self.options: dict[int, int] = {}

    def mallinfo2(self):
        return SimpleNamespace(fordblks=self.free)

    def mallopt(self, param: int, value: int) -> int:
        self.options[param] = value
        return 1

    def malloc_trim(self, pad: int) -> int:
        self.trimmed += 1
        self.rss[0] -= self.free  # what was free and resident goes back
        return 1


def heap(start_rss: int = 100 * MB) -> tuple[HeapTrim, FakeLibc, list[int]]:
    rss = [start_rss]
    libc = FakeLibc(rss)
    return HeapTrim(threshold_bytes=16 * MB, libc=libc, rss=lambda: rss[0]), libc, rss


def test_nothing_is_trimmed_below_the_threshold():
    trim, libc, rss = heap()
    rss[0] += 10 * MB
    libc.free = 10 * MB
    assert not trim.trim_if_worth() and libc.trimmed == 0


def test_a_burst_freed_is_given_back_once():
    trim, libc, rss = heap()
    rss[0] += 300 * MB  # a burst of large requests, then freed: resident, and free in the arenas
    libc.free = 300 * MB
    assert trim.trim_if_worth() and rss[0] == 100 * MB
    # the arenas still count the chunks free (given back, not unmapped): no second trim for them
    assert not trim.trim_if_worth() and libc.trimmed == 1


def test_growth_held_by_live_data_is_not_trimmed_again_and_again():
    trim, libc, rss = heap()
    rss[0] += 200 * MB  # a cache, still in use
    libc.free = 20 * MB
    assert trim.trim_if_worth()  # tried once: 20 MB back
    assert rss[0] == 280 * MB
    libc.free = 20 * MB  # nothing new resident
    assert not trim.trim_if_worth() and libc.trimmed == 1
    rss[0] += 40 * MB  # grows again past the threshold: looked at again
    assert trim.trim_if_worth() and libc.trimmed == 2


def test_what_a_burst_freed_in_the_arenas_goes_back_though_rss_fell_meanwhile():
    trim, libc, rss = heap()
    rss[0] += 600 * MB  # the burst at its peak: trimmed while it runs, little free yet
    libc.free = 20 * MB
    assert trim.trim_if_worth() and rss[0] == 680 * MB
    rss[0] = 180 * MB  # its large blocks unmapped; 80 MB it freed in the arenas are still resident
    libc.free = 80 * MB
    assert trim.trim_if_worth() and rss[0] == 100 * MB
    assert not trim.trim_if_worth()  # where the trim left it: nothing more to do


def test_without_glibc_it_does_nothing(monkeypatch):
    monkeypatch.setattr(heap_trim, "glibc", lambda: None)  # musl, macOS
    trim = HeapTrim(rss=lambda: 10**12)
    assert not trim.available and trim.free_bytes() is None and not trim.trim_if_worth()
    trim.start()
    trim.stop()  # no thread was started: returns at once


def test_this_interpreter_reads_glibc_when_it_has_it():
    import platform

    name, version = platform.libc_ver()
    if name == "glibc" and tuple(int(p) for p in version.split(".")[:2]) >= (2, 33):  # mallinfo2's first release
        assert glibc() is not None and HeapTrim().free_bytes() >= 0


def test_start_fixes_the_arenas_thresholds_and_stop_ends_the_thread():
    trim, libc, _ = heap()
    trim.start()
    try:
        assert libc.options == {heap_trim.M_MMAP_THRESHOLD: 32 * MB, heap_trim.M_TRIM_THRESHOLD: 2 * MB}
    finally:
        trim.stop()
    assert trim._thread is not None and not trim._thread.is_alive()
