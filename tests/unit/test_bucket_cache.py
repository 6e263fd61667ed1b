"""An instance's forms per bucket of shapes (serving.runners.bucket_cache) and the
background compiler of frozen plans (serving.runners.plan_compiler), with a fake
compile step and a fake clock: what runs when, the budget, failures, and that no call
ever waits for a compile. Inductor itself: tests/integration/test_torch_compile.py."""

from __future__ import annotations

import threading

import torch

from serving.runners.bucket_cache import BucketCache
from serving.runners.frozen_plan import bucket_of, freeze
from serving.runners.onnx_graph import OnnxGraph
from serving.runners.plan_compiler import PENDING, CompileThread, PlanCompiler
from tests.support.fake_clock import FakeClock
from tests.support.onnx_nets import conv_net, floats

WAIT_S = 30  # generous: the compiles below are fakes that return at once


def inputs(h: int, n: int = 1):
    return [torch.from_numpy(floats(n, 4, h, 4))]


def plan_form(graph):
    def build(bucket, compiled):
        body = compiled if compiled is not None else freeze(graph, bucket, "cpu")
        return lambda inputs: body(*inputs)

    return build


class CompiledByFake:
    """A "compiled" plan: the plan itself, marked, so a test sees which form answered."""

    def __init__(self, plan):
        self.plan = plan
        self.bucket = plan.bucket
        self.calls = 0

    def __call__(self, *inputs):
        self.calls += 1
        return self.plan(*inputs)


class FakeCompile:
    """Compiles a plan by wrapping it; each compile advances the fake clock by its cost. A
    compile can be held until the test lets it go, and a bucket can be made to fail."""

    def __init__(self, clock: FakeClock, cost_s: float = 10.0):
        self.clock = clock
        self.cost_s = cost_s
        self.done: list = []
        self.fail: set = set()
        self.gate = threading.Event()
        self.gate.set()
        self.started = threading.Event()

    def __call__(self, plan, device):
        self.started.set()
        self.gate.wait(WAIT_S)
        self.clock.advance(self.cost_s)
        if plan.bucket in self.fail:
            raise RuntimeError("no C compiler found")
        self.done.append(plan.bucket)
        return CompiledByFake(plan)


def compiler_for(graph, budget_s=100.0, cost_s=10.0):
    clock = FakeClock()
    fake = FakeCompile(clock, cost_s)
    # a thread of the test's own: a compile the test holds delays no other test's
    thread = CompileThread(name="bl-compile-test")
    compiler = PlanCompiler(graph, "cpu", budget_s, compile_plan=fake, clock=clock, name="conv", thread=thread)
    compiler.attach()
    return compiler, fake


def test_the_cache_runs_a_new_shape_on_the_module_and_its_plan_from_its_second_call():
    graph = OnnxGraph(conv_net()).eval()
    module_calls, built = [], []

    def module(*xs):
        module_calls.append(bucket_of(xs))
        return graph(*xs)

    def build(bucket, compiled):
        built.append((bucket, compiled))
        return plan_form(graph)(bucket, compiled)

    cache = BucketCache(module, build, max_buckets=2)
    a, b, c = (inputs(h) for h in (4, 5, 6))
    with torch.inference_mode():
        want = graph(*a)[0]
        assert torch.equal(cache(a)[0], want) and (len(module_calls), built) == (1, [])
        assert torch.equal(cache(a)[0], want) and built == [(bucket_of(a), None)]
        cache(a)
        assert len(module_calls) == 1 and len(built) == 1 and cache.captured == 1 and cache.compiled == 0
        cache(b)
        cache(c)  # a, the least recently used, goes
        assert len(cache) == 2
        cache(a)  # seen afresh: the module again
    assert len(module_calls) == 4 and len(built) == 1


def test_a_shape_whose_form_fails_runs_the_module_and_is_not_tried_again(caplog):
    graph = OnnxGraph(conv_net()).eval()
    tries = []

    def build(bucket, compiled):
        tries.append(bucket)
        raise RuntimeError("CUDA out of memory")

    cache = BucketCache(graph, build)
    x = inputs(4)
    with torch.inference_mode(), caplog.at_level("WARNING", logger="serving.runners.bucket_cache"):
        want = graph(*x)[0]
        for _ in range(3):
            assert torch.equal(cache(x)[0], want)
    assert len(tries) == 1 and "could not build the frozen plan or CUDA graph for" in caplog.text
    assert "CUDA out of memory" in caplog.text


def test_a_shape_runs_its_plan_while_it_compiles_then_its_compiled_plan():
    graph = OnnxGraph(conv_net()).eval()
    compiler, fake = compiler_for(graph)
    fake.gate.clear()  # the compile is held: calls meanwhile must not wait for it
    cache = BucketCache(graph, plan_form(graph), compiler=compiler)
    x = inputs(4)
    with torch.inference_mode():
        want = graph(*x)[0]
        for _ in range(4):  # module, then the plan, compiling in the background
            assert torch.equal(cache(x)[0], want)
        assert compiler.result(bucket_of(x)) is PENDING and cache.compiled == 0 and compiler.busy
        fake.gate.set()
        assert compiler.wait(WAIT_S)
        compiled = compiler.result(bucket_of(x))
        assert isinstance(compiled, CompiledByFake) and compiled.calls == 0
        torch.testing.assert_close(cache(x)[0], want)
        assert compiled.calls == 1 and cache.compiled == 1 and not compiler.busy


def test_instances_on_one_device_share_a_compile_and_a_late_one_takes_it_at_once():
    graph = OnnxGraph(conv_net()).eval()
    compiler, fake = compiler_for(graph)
    compiler.attach()
    first = BucketCache(graph, plan_form(graph), compiler=compiler)
    second = BucketCache(graph, plan_form(graph), compiler=compiler)
    x = inputs(4)
    with torch.inference_mode():
        first(x), first(x)
        assert compiler.wait(WAIT_S)
        second(x), second(x)  # its second call finds the shape compiled
    assert fake.done == [bucket_of(x)] and second.compiled == 1


def test_the_budget_stops_compiling_and_the_shapes_left_keep_their_plans(caplog):
    graph = OnnxGraph(conv_net()).eval()
    compiler, fake = compiler_for(graph, budget_s=25, cost_s=10)
    fake.gate.clear()  # queue every shape first
    cache = BucketCache(graph, plan_form(graph), compiler=compiler)
    shapes = [inputs(h) for h in (4, 5, 6, 7)]
    with torch.inference_mode(), caplog.at_level("WARNING", logger="serving.runners.plan_compiler"):
        for x in shapes:
            cache(x), cache(x)
        fake.gate.set()
        assert compiler.wait(WAIT_S)
        for x in shapes:
            torch.testing.assert_close(cache(x)[0], graph(*x)[0])
        late = inputs(8)
        cache(late), cache(late)
    # 10 s spent, then 20 s: a third compile taking as long as the last would pass 25 s
    assert fake.done == [bucket_of(shapes[0]), bucket_of(shapes[1])]
    assert compiler.spent_s == 20 and cache.compiled == 2
    assert [compiler.result(bucket_of(x)) for x in (*shapes[2:], late)] == [None, None, None]
    assert "the budget of 25s is spent (20s): 2 shape(s) compiled, 2 left on their plans" in caplog.text


def test_a_compile_that_fails_is_logged_counted_and_its_shape_keeps_its_plan(caplog):
    graph = OnnxGraph(conv_net()).eval()
    compiler, fake = compiler_for(graph)
    bad, good = inputs(4), inputs(5)
    fake.fail.add(bucket_of(bad))
    cache = BucketCache(graph, plan_form(graph), compiler=compiler)
    with torch.inference_mode(), caplog.at_level("WARNING", logger="serving.runners.plan_compiler"):
        for x in (bad, good):
            cache(x), cache(x)
        assert compiler.wait(WAIT_S)
        for x in (bad, good):
            torch.testing.assert_close(cache(x)[0], graph(*x)[0])
    assert compiler.result(bucket_of(bad)) is None and cache.compiled == 1 and compiler.spent_s == 20
    assert "could not compile [(1, 4, 4, 4)] (RuntimeError: no C compiler found); it runs its plan" in caplog.text


def test_the_compiler_stops_when_its_last_instance_leaves():
    graph = OnnxGraph(conv_net()).eval()
    compiler, fake = compiler_for(graph)
    compiler.attach()  # two instances
    fake.gate.clear()
    first, second = inputs(4), inputs(5)
    compiler.request(bucket_of(first))
    compiler.request(bucket_of(second))
    assert fake.started.wait(WAIT_S)  # the first is compiling, the second queued
    compiler.detach()
    assert compiler.busy  # one instance is left
    compiler.detach()
    fake.gate.set()
    assert compiler.wait(WAIT_S)
    # the compile under way finished; the one queued behind it never started, nor does a new one
    compiler.request(bucket_of(inputs(6)))
    assert fake.done == [bucket_of(first)] and not compiler.busy


def test_two_models_in_one_process_compile_one_at_a_time_and_neither_pays_for_the_wait():
    """det and rec in one device process: Inductor's compile is not thread-safe."""
    clock = FakeClock()
    running, most = [], []
    lock = threading.Lock()

    class Overlap(FakeCompile):
        def __call__(self, plan, device):
            with lock:
                running.append(plan)
                most.append(len(running))
            self.started.set()
            # a held compile: were the other model's compile not waiting, it would overlap here
            threading.Event().wait(0.2)
            with lock:
                running.remove(plan)
            return super().__call__(plan, device)

    graph = OnnxGraph(conv_net()).eval()
    compilers = []
    for name in ("det", "rec"):
        compiler = PlanCompiler(graph, "cpu", 100, compile_plan=Overlap(clock, 10), clock=clock, name=name)
        compiler.attach()
        compilers.append(compiler)
    for compiler in compilers:
        compiler.request(bucket_of(inputs(4)))
    assert all(c.wait(WAIT_S) for c in compilers)
    assert max(most) == 1
    assert [c.spent_s for c in compilers] == [10, 10]  # each its own compile's seconds


def test_every_compile_of_a_process_runs_on_one_thread_that_outlives_its_compilers():
    """A CUDA build of torch with no GPU visible crashes tracing on a thread once the first
    thread that traced has exited: one thread compiles, and never exits."""
    graph = OnnxGraph(conv_net()).eval()
    thread = CompileThread(name="bl-compile-test")
    ran_on = []

    class Where(FakeCompile):
        def __call__(self, plan, device):
            ran_on.append(threading.get_ident())
            return super().__call__(plan, device)

    clock = FakeClock()
    for name in ("det", "rec"):  # one compiler after the other has stopped, with its bursts between
        compiler = PlanCompiler(graph, "cpu", 100, compile_plan=Where(clock), clock=clock, name=name, thread=thread)
        compiler.attach()
        for h in (4, 5):
            compiler.request(bucket_of(inputs(h)))
            assert compiler.wait(WAIT_S)
        compiler.detach()
    assert len(ran_on) == 4 and set(ran_on) == {thread.ident}
    assert any(t.ident == thread.ident and t.is_alive() for t in threading.enumerate())


def test_two_models_compiling_at_once_take_turns_a_shape_each():
    graph = OnnxGraph(conv_net()).eval()
    thread = CompileThread(name="bl-compile-test")
    order = []
    gate = threading.Event()

    class Logged(FakeCompile):
        def __init__(self, clock, name):
            super().__init__(clock)
            self.name = name

        def __call__(self, plan, device):
            gate.wait(WAIT_S)  # every shape is queued before the first compiles
            order.append((self.name, plan.bucket[0].shape[2]))
            return super().__call__(plan, device)

    clock = FakeClock()
    compilers = [
        PlanCompiler(graph, "cpu", 100, compile_plan=Logged(clock, name), clock=clock, name=name, thread=thread)
        for name in ("det", "rec")
    ]
    for compiler in compilers:
        compiler.attach()
        for h in (4, 5, 6):
            compiler.request(bucket_of(inputs(h)))
    gate.set()
    assert all(c.wait(WAIT_S) for c in compilers)
    assert order == [("det", 4), ("rec", 4), ("det", 5), ("rec", 5), ("det", 6), ("rec", 6)]


def test_a_forked_child_compiles_on_a_thread_of_its_own(monkeypatch):
    """A fork copies the thread object, not the thread: the child starts its own at its first job."""
    from serving.runners import plan_compiler

    thread = CompileThread(name="bl-compile-test")
    ran_on = []

    def ran_on_the_thread() -> int:
        done = threading.Event()
        thread.submit(lambda: (ran_on.append(threading.get_ident()), done.set()))
        assert done.wait(WAIT_S)
        return ran_on[-1]

    in_the_parent = ran_on_the_thread()
    monkeypatch.setattr(plan_compiler.os, "getpid", lambda: 4242)  # now in a child
    in_the_child = ran_on_the_thread()
    assert in_the_child != in_the_parent and in_the_child == thread.ident
