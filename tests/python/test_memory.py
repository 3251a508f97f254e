"""Memory does not grow over many generate and train calls, nor over many policies made and dropped.

Three gauges, read after a warm-up (the first iterations fill the library's
and numpy's caches and the allocator's free lists, so growth is measured
between two later points):

- the C heap in use, from glibc's mallinfo2 (every arena, mmapped blocks
  included): the library's allocations and numpy's data buffers, to the byte;
- the Python heap, from tracemalloc (objects and numpy buffers the binding
  keeps);
- the resident set (VmRSS), a coarse check of everything else.

The bounds sit far from both sides: measured on this project's 2-core
machine, the C heap grows about 20-30 KB and the Python heap 10-20 KB over
the measured 200 iterations (caches settling, converging), while the smallest
leak that matters, one rollout batch per iteration (32 completions of 12
tokens: 3 KB in C, more as numpy copies), would add over 600 KB. Skipped
under the sanitizers, whose allocators make these figures meaningless (ASan
itself reports leaks there).
"""
from __future__ import annotations

import ctypes
import gc
import tracemalloc

import numpy as np
import pytest

import fp8rl
from conftest import SANITIZED, tiny_config

pytestmark = pytest.mark.skipif(SANITIZED, reason="memory figures mean nothing under the sanitizers")

KB, MB = 1024, 1024 * 1024


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _mallinfo2():
    try:
        function = ctypes.CDLL(None).mallinfo2  # glibc >= 2.33
    except AttributeError:
        return None
    function.restype = _Mallinfo2
    return function


MALLINFO2 = _mallinfo2()


def c_heap_in_use() -> int:
    """Bytes malloc has handed out and not got back (0 where glibc's mallinfo2 is missing)."""
    if MALLINFO2 is None:
        return 0
    info = MALLINFO2()
    return info.uordblks + info.hblkhd


def resident_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def gauges() -> dict:
    gc.collect()
    return {"c heap": c_heap_in_use(), "python heap": tracemalloc.get_traced_memory()[0], "resident": resident_bytes()}


def growth(before: dict, after: dict) -> dict:
    return {name: after[name] - before[name] for name in before}


@pytest.fixture
def traced():
    tracemalloc.start()
    yield
    tracemalloc.stop()


def test_many_generate_and_train_calls_do_not_grow_memory(traced):
    warm_up, measured = 100, 200
    sampling = fp8rl.SamplingParams(max_new_tokens=12, stop_at_eos=False)
    with fp8rl.Policy.random(tiny_config(), seed=1, recipe=fp8rl.Recipe.fp8_full()) as policy:
        truncated = fp8rl.ImportanceConfig(mode=fp8rl.ImportanceMode.TRUNCATED)
        policy.start_training(loss=fp8rl.LossConfig(group_size=4, importance=truncated),
                              optimizer=fp8rl.OptimizerConfig(learning_rate=1e-2))
        for iteration in range(warm_up + measured):
            if iteration == warm_up:
                before = gauges()
            prompts = [[8 + (iteration + i // 4) % 20, 3] for i in range(32)]
            rollouts = policy.generate(prompts, sampling)  # no close(): garbage collection must free it
            rewards = [float(np.mean(completion.tokens == 7)) for completion in rollouts]
            metrics = policy.train_step(rollouts, rewards=rewards)
            policy.score(rollouts)
        after = gauges()
    assert metrics["step"] == warm_up + measured
    grown = growth(before, after)
    assert grown["c heap"] < 256 * KB, grown
    assert grown["python heap"] < 128 * KB, grown
    assert grown["resident"] < 4 * MB, grown


def test_many_policies_made_and_dropped_do_not_grow_memory(traced):
    # each policy with its trainer holds about 1.5 MB (weights, compute copies, gradients, AdamW moments)
    warm_up, measured = 10, 40
    for iteration in range(warm_up + measured):
        if iteration == warm_up:
            before = gauges()
        policy = fp8rl.Policy.random(tiny_config(), seed=iteration, recipe=fp8rl.Recipe.fp8_full())
        policy.start_training()
        policy.train_step(policy.generate([[1, 2]] * 2, fp8rl.SamplingParams(max_new_tokens=4)),
                          rewards=[0.0, 1.0])
        if iteration % 2:
            policy.close()
        del policy  # the other half is freed by garbage collection
    after = gauges()
    grown = growth(before, after)
    assert grown["c heap"] < 512 * KB, grown
    assert grown["python heap"] < 128 * KB, grown
    assert grown["resident"] < 8 * MB, grown
