"""HeapTrim (serving/runners/heap_trim.py) with a fake C library and a fake RSS: it
trims when, since its last trim, the arenas' free bytes rose past the threshold over
the lowest seen, or the process grew past it while the arenas hold that much free;
never for memory in use."""

import platform
import time

from serving.runners import heap_trim
from serving.runners.heap_trim import HeapTrim, glibc

MB = 1 << 20


class FakeProcess:
    """The arenas' free bytes (``free``, as mallinfo2 counts them: resident or given back)
    and how much of that is resident (``resident_free``), beside what is in use."""

    def __init__(self, in_use: int):
        self.in_use = in_use
        self.free = 0
        self.resident_free = 0
        self.trimmed = 0

    @property
    def rss(self) -> int:
        return self.in_use + self.resident_free

    def allocate(self, n: int) -> None:
        """A burst takes ``n``: from free chunks first (resident again), the rest new."""
        reused = min(n, self.free)
        self.free -= reused
        self.resident_free = max(0, self.resident_free - reused)
        self.in_use += n

    def release(self, n: int) -> None:
        """Freed into the arenas: still resident."""
        self.in_use -= n
        self.free += n
        self.resident_free += n

    def mallinfo2(self):
        return type("Info", (), {"fordblks": self.free})()

    def malloc_trim(self, pad: int) -> int:
        self.trimmed += 1
        self.resident_free = 0  # given back; mallinfo2 still counts the chunks free
        return 1


def heap() -> tuple[HeapTrim, FakeProcess]:
    process = FakeProcess(100 * MB)
    return HeapTrim(threshold_bytes=16 * MB, libc=process, rss=lambda: process.rss), process


def test_nothing_is_trimmed_below_the_threshold():
    trim, process = heap()
    process.allocate(10 * MB)
    process.release(10 * MB)
    assert not trim.trim_if_worth() and process.trimmed == 0


def test_a_burst_freed_goes_back_though_rss_never_moved_when_it_was_freed():
    trim, process = heap()
    process.allocate(300 * MB)
    assert not trim.trim_if_worth()  # in use: nothing free to give back
    process.release(300 * MB)  # RSS stays where the burst left it
    assert trim.trim_if_worth() and process.rss == 100 * MB
    assert not trim.trim_if_worth() and process.trimmed == 1  # the chunks stay counted free: no second trim


def test_a_burst_between_two_looks_goes_back():
    trim, process = heap()
    process.allocate(300 * MB)
    process.release(300 * MB)
    assert trim.trim_if_worth() and process.rss == 100 * MB


def test_what_a_burst_frees_after_a_trim_in_its_middle_goes_back_too():
    trim, process = heap()
    process.allocate(300 * MB)
    process.release(100 * MB)  # a look in the middle: 100 MB free, and the process grew
    assert trim.trim_if_worth() and process.rss == 300 * MB
    process.release(200 * MB)  # the rest of the burst done; RSS does not move
    assert trim.trim_if_worth() and process.rss == 100 * MB


def test_memory_in_use_is_never_trimmed_for():
    trim, process = heap()
    process.allocate(200 * MB)  # a cache, a queue of requests: grown, nothing free
    assert not trim.trim_if_worth() and process.trimmed == 0


def test_a_second_burst_that_reuses_what_was_given_back_goes_back_too():
    """The arenas' free bytes never dip between two looks, but RSS grew: trimmed at most
    once a look, whatever the load (a steady one reusing its freed chunks pays a refault a look)."""
    trim, process = heap()
    process.allocate(200 * MB)
    process.release(200 * MB)
    assert trim.trim_if_worth() and process.rss == 100 * MB
    process.allocate(200 * MB)  # from the chunks given back: resident again
    process.release(200 * MB)
    assert trim.trim_if_worth() and process.rss == 100 * MB and process.trimmed == 2


def test_without_glibc_it_does_nothing(monkeypatch):
    monkeypatch.setattr(heap_trim, "glibc", lambda: None)  # musl, macOS
    trim = HeapTrim(rss=lambda: 10**12)
    assert not trim.available and trim.free_bytes() is None and not trim.trim_if_worth()
    trim.start()
    trim.stop()  # no thread was started: returns at once


def test_start_looks_on_a_thread_and_stop_ends_it():
    trim, process = heap()
    trim.interval_s = 0.01
    trim.start()
    try:
        process.allocate(300 * MB)
        process.release(300 * MB)
        deadline = time.monotonic() + 30
        while process.trimmed == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        trim.stop()
    assert process.trimmed >= 1 and trim._thread is not None and not trim._thread.is_alive()


def test_this_interpreter_reads_glibc_when_it_has_it():
    name, version = platform.libc_ver()
    if name == "glibc" and tuple(int(p) for p in version.split(".")[:2]) >= (2, 33):  # mallinfo2's first release
        assert glibc() is not None and HeapTrim().free_bytes() >= 0
