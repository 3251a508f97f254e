"""The Python binding's communicator over mpi4py, run by every rank of an MPI job (tests/mpi/CMakeLists.txt).

Every rank runs the same tests in the same order, so their collectives match.
"""
from __future__ import annotations

import pytest
from mpi4py import MPI

import fp8rl
from fp8rl.communicator import MPI_LIBRARY_ENV, mpi_library_path

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()

#: The tiny Llama of examples/rl_loop.c.
TINY = dict(vocab_size=32, hidden_size=64, num_layers=2, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=128, max_position_embeddings=32)

#: Metrics that are this rank's own: wall-clock times and communication volume.
PER_RANK_METRICS = {"tokens_per_second", "generation_seconds", "recompute_seconds", "train_seconds",
                    "recalibration_seconds", "recalibration_fraction", "communication_seconds", "bytes_reduced",
                    "bytes_gathered"}


def test_the_communicator_and_its_context_have_the_rank_and_size_of_the_mpi4py_communicator():
    with fp8rl.Communicator.from_mpi4py(COMM) as communicator:
        assert (communicator.rank, communicator.world_size) == (RANK, SIZE)
        context = fp8rl.Context(communicator=communicator)
    with context:  # the context keeps its own reference
        assert (context.rank, context.world_size) == (RANK, SIZE)
        assert f"MPI, rank {RANK} of {SIZE}" in context.description
    with fp8rl.Context() as alone:
        assert (alone.rank, alone.world_size) == (0, 1)


def test_a_split_communicator_may_be_freed_once_the_communicator_exists():
    half = COMM.Split(RANK % 2, -RANK)  # reversed order within each half
    with fp8rl.Communicator.from_mpi4py(half) as communicator:
        half.Free()
        members = list(range(RANK % 2, SIZE, 2))
        assert communicator.world_size == len(members)
        assert communicator.rank == len(members) - 1 - members.index(RANK)


def test_what_is_no_intracommunicator_is_refused():
    with pytest.raises(fp8rl.InvalidArgumentError, match="expected an mpi4py communicator, got object"):
        fp8rl.Communicator.from_mpi4py(object())
    with pytest.raises(fp8rl.InvalidArgumentError, match=r"fortran_comm \(-?\d+\) is MPI_COMM_NULL"):
        fp8rl.Communicator.from_mpi4py(MPI.COMM_NULL)


def test_a_wrong_library_override_names_the_variable(monkeypatch):
    monkeypatch.setenv(MPI_LIBRARY_ENV, "/nonexistent/libfp8rl_mpi.so")
    with pytest.raises(ImportError, match=MPI_LIBRARY_ENV):
        mpi_library_path()


def test_data_parallel_steps_leave_every_rank_the_same_policy_and_the_same_global_metrics():
    with fp8rl.Communicator.from_mpi4py(COMM) as communicator:
        context = fp8rl.Context(num_threads=1, communicator=communicator)
    # Each rank starts elsewhere: the trainer starts every rank from rank 0's weights.
    with context, fp8rl.Policy.random(fp8rl.ModelConfig(**TINY), seed=1 + RANK, recipe=fp8rl.Recipe.fp8_full(),
                                      context=context) as policy:
        policy.start_training(loss=fp8rl.LossConfig(group_size=2), optimizer=fp8rl.OptimizerConfig(learning_rate=1e-3))
        for _ in range(2):
            prompts = [[3 + RANK, 5, 7]] * 2 + [[9, 4]] * 2  # this rank's two groups
            with policy.generate(prompts, fp8rl.SamplingParams(max_new_tokens=4, stop_at_eos=False)) as rollouts:
                metrics = policy.train_step(rollouts, rewards=[float(c.tokens.sum() % 3) for c in rollouts])
            assert len(set(COMM.allgather(policy.fingerprint))) == 1
            assert metrics["token_mult_prob_error"] == 1.0
            assert metrics["sequences"] == 4 * SIZE
            assert metrics["bytes_reduced"] > 0 and metrics["bytes_gathered"] > 0
            global_metrics = {key: value for key, value in metrics.items() if key not in PER_RANK_METRICS}
            assert all(other == global_metrics for other in COMM.allgather(global_metrics))
