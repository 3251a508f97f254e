//! Data parallelism through the binding: ranks as threads over the example's
//! in-process collectives (examples/data_parallel.rs, which this also runs).
//!
//! The expectations are the header's: every rank holds bitwise the same
//! compute weights after every iteration (equal fingerprints), the metrics
//! are global (the same on every rank, counting every rank's sequences), FP8
//! rollouts and training agree bit for bit (token_mult_prob_error exactly 1),
//! a failing collective fails the training call naming it, and the
//! collectives live exactly as long as the last reference to the communicator.

mod common;

#[path = "../examples/data_parallel.rs"]
#[allow(dead_code)] // its main() is for `cargo run --example`
mod data_parallel;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::{assert_from_library, expect_error, sampling, tiny_config, TempDir};
use data_parallel::{Hub, RankOutcome, ThreadCollectives, GROUP, NEW_TOKENS, PROMPTS_PER_RANK};
use fp8rl::{
    build_features, nccl_unique_id, CollectiveResult, Communicator, Context, DType, Error, HostCollectives, Policy,
    Result, Sequences, Status, SumBuffer, TrainMetrics, Trainer, TrainerOptions,
};

const ITERATIONS: usize = 3;

fn check_lockstep(world_size: usize, outcomes: &[RankOutcome]) {
    assert_eq!(outcomes.len(), world_size);
    for (rank, outcome) in outcomes.iter().enumerate() {
        assert_eq!((outcome.rank, outcome.world_size), (rank, world_size), "the context's rank and world size");
        assert_eq!(outcome.fingerprints.len(), ITERATIONS + 1);
        // Ranks start from different random weights; the trainer starts them
        // all from rank 0's, and every iteration keeps them bitwise equal.
        assert_eq!(outcome.fingerprints, outcomes[0].fingerprints, "rank {rank}'s weights differ from rank 0's");
        for (iteration, metrics) in outcome.iterations.iter().enumerate() {
            let total = &metrics.total;
            assert!(total.has_mismatch);
            assert_eq!(total.token_mult_prob_error, 1.0, "rank {rank}, iteration {iteration}: FP8 rollout != training");
            // Global counts: every rank's sequences and tokens.
            let sequences = world_size * PROMPTS_PER_RANK * GROUP;
            assert_eq!(total.sequences, sequences as i64);
            assert_eq!(total.completion_tokens, (sequences * NEW_TOKENS) as i64);
            // Global statistics: the same bits on every rank.
            let first = &outcomes[0].iterations[iteration].total;
            for (name, mine, rank0) in [
                ("loss", total.loss, first.loss),
                ("grad_norm", total.grad_norm, first.grad_norm),
                ("reward_mean", total.reward_mean, first.reward_mean),
                ("entropy", total.entropy, first.entropy),
            ] {
                assert_eq!(mine.to_bits(), rank0.to_bits(), "rank {rank}, iteration {iteration}: {name}");
            }
            assert!(total.bytes_reduced > 0 && total.bytes_gathered > 0, "rank {rank} communicated nothing");
            assert!(total.communication_seconds >= 0.0);
        }
    }
    for pair in outcomes[0].fingerprints.windows(2) {
        assert_ne!(pair[0], pair[1], "an iteration left the weights unchanged");
    }
}

#[test]
fn two_ranks_train_in_lockstep() {
    check_lockstep(2, &data_parallel::run(2, ITERATIONS).expect("the ranks train"));
}

#[test]
fn three_ranks_train_in_lockstep() {
    check_lockstep(3, &data_parallel::run(3, ITERATIONS).expect("the ranks train"));
}

/// What one GRPO step on `prompts` did: the seeds drawn, the completions and the metrics.
struct FirstStep {
    seeds: Vec<u64>,
    completions: Vec<Vec<i32>>,
    metrics: TrainMetrics,
}

/// The first GRPO step of a fresh policy (seed 1, BF16: FP8's token tiles
/// would quantize a rank's tokens apart from the others') on `context`.
fn first_step(context: &Context, prompts: &[[i32; 3]]) -> Result<FirstStep> {
    let policy = Policy::random(context, &tiny_config(), 1)?;
    let mut trainer = Trainer::new(&policy, &TrainerOptions::new().learning_rate(1e-2).group_size(GROUP as i32))?;
    let seeds = trainer.next_seeds(prompts.len())?;
    let rollout = policy.generate(prompts, &seeds, &sampling(NEW_TOKENS as i32))?;
    let mut sequences = Sequences::new();
    let (mut logp_gen, mut rewards, mut completions) = (Vec::new(), Vec::new(), Vec::new());
    for (prompt, completion) in prompts.iter().zip(&rollout) {
        sequences.push(prompt, completion.tokens);
        logp_gen.extend_from_slice(completion.logprobs);
        rewards.push(completion.tokens.iter().filter(|&&token| token == 7).count() as f32);
        completions.push(completion.tokens.to_vec());
    }
    let metrics = trainer.step(&sequences.batch().logp_gen(&logp_gen).rewards(&rewards))?;
    Ok(FirstStep { seeds, completions, metrics })
}

/// Rank r's prompts: PROMPTS_PER_RANK groups of GROUP copies.
fn prompts_of(rank: usize) -> Vec<[i32; 3]> {
    (0..PROMPTS_PER_RANK * GROUP).map(|i| [3 + (rank * PROMPTS_PER_RANK + i / GROUP) as i32, 9, 4]).collect()
}

#[test]
fn a_data_parallel_step_is_one_process_step_on_the_union_of_the_batches() {
    const WORLD: usize = 2;
    let ranks = run_ranks(
        WORLD,
        |inner| inner,
        |rank, communicator| {
            let context = Context::builder().num_threads(1).communicator(&communicator).build()?;
            first_step(&context, &prompts_of(rank))
        },
    );
    let ranks: Vec<FirstStep> = ranks.into_iter().collect::<Result<_>>().expect("the ranks train");
    let union: Vec<[i32; 3]> = (0..WORLD).flat_map(prompts_of).collect();
    let alone = first_step(&Context::builder().num_threads(1).build().unwrap(), &union).unwrap();

    // One seed stream over the ranks, in rank order; the same weights, so the same completions.
    assert_eq!(ranks.iter().flat_map(|rank| rank.seeds.clone()).collect::<Vec<_>>(), alone.seeds);
    assert_eq!(ranks.iter().flat_map(|rank| rank.completions.clone()).collect::<Vec<_>>(), alone.completions);
    // Gradients summed over the ranks: the union's loss and gradient norm, up
    // to the order of the sums.
    for rank in &ranks {
        let (mine, all) = (&rank.metrics, &alone.metrics);
        assert_eq!((mine.sequences, mine.completion_tokens), (all.sequences, all.completion_tokens));
        for (name, got, want) in [
            ("reward_mean", mine.reward_mean, all.reward_mean),
            ("loss", mine.loss, all.loss),
            ("grad_norm", mine.grad_norm, all.grad_norm),
            ("entropy", mine.entropy, all.entropy),
        ] {
            assert!((got - want).abs() <= 1e-5 * want.abs().max(1e-3), "{name}: {got} with 2 ranks, {want} alone");
        }
    }
}

/// Runs `body(rank, communicator)` on `world_size` threads, each with a
/// communicator over `wrap(its ThreadCollectives)`; the results in rank order.
fn run_ranks<C, T>(
    world_size: usize,
    wrap: impl Fn(ThreadCollectives) -> C,
    body: impl Fn(usize, Communicator) -> T + Send + Sync + 'static,
) -> Vec<T>
where
    C: HostCollectives,
    T: Send + 'static,
{
    let hub = Hub::new(world_size);
    let body = Arc::new(body);
    let ranks: Vec<_> = (0..world_size)
        .map(|rank| {
            let collectives = wrap(ThreadCollectives::new(&hub, rank));
            let body = Arc::clone(&body);
            std::thread::spawn(move || {
                let communicator =
                    Communicator::from_collectives(rank, world_size, collectives).expect("a communicator");
                body(rank, communicator)
            })
        })
        .collect();
    ranks.into_iter().map(|rank| rank.join().expect("a rank panicked")).collect()
}

/// One GRPO step on this rank's prompts (GROUP completions of one prompt).
fn grpo_step(policy: &Policy<'_>, trainer: &mut Trainer<'_>, rank: usize) -> Result<()> {
    let prompts = vec![[3 + rank as i32, 4, 5]; GROUP];
    let seeds = trainer.next_seeds(prompts.len())?;
    let rollout = policy.generate(&prompts, &seeds, &sampling(4))?;
    let mut sequences = Sequences::new();
    let mut rewards = Vec::new();
    for (prompt, completion) in prompts.iter().zip(&rollout) {
        sequences.push(prompt, completion.tokens);
        rewards.push(completion.tokens.iter().filter(|&&token| token == 7).count() as f32);
    }
    trainer.step(&sequences.batch().rewards(&rewards)).map(|_| ())
}

/// A context, a random policy and a trainer on `communicator`, then one step.
fn train_one_step(rank: usize, communicator: &Communicator) -> Result<()> {
    let context = Context::builder().num_threads(1).communicator(communicator).build()?;
    let policy = Policy::random(&context, &tiny_config(), 1)?;
    let mut trainer = Trainer::new(&policy, &TrainerOptions::new().learning_rate(1e-2).group_size(GROUP as i32))?;
    grpo_step(&policy, &mut trainer, rank)
}

/// How a [`Failing`] collective fails.
#[derive(Clone, Copy)]
enum Failure {
    Error,
    Panic,
}

/// Collectives that fail one of them, on every rank alike (so no rank waits
/// for a peer that has given up), and forward the rest.
struct Failing {
    inner: ThreadCollectives,
    collective: &'static str,
    failure: Failure,
}

impl Failing {
    fn check(&self, collective: &str) -> CollectiveResult {
        if collective != self.collective {
            return Ok(());
        }
        match self.failure {
            Failure::Error => Err(format!("injected {collective} failure").into()),
            Failure::Panic => panic!("injected {collective} panic"),
        }
    }
}

impl HostCollectives for Failing {
    fn name(&self) -> Option<&str> {
        self.inner.name()
    }
    fn all_reduce_sum(&mut self, data: SumBuffer<'_>) -> CollectiveResult {
        self.check("all_reduce_sum")?;
        self.inner.all_reduce_sum(data)
    }
    fn all_gather(&mut self, data: &mut [u8], counts: &[usize]) -> CollectiveResult {
        self.check("all_gather")?;
        self.inner.all_gather(data, counts)
    }
    fn broadcast(&mut self, data: &mut [u8], root: usize) -> CollectiveResult {
        self.check("broadcast")?;
        self.inner.broadcast(data, root)
    }
}

fn expect_collective_error(error: &Error, rank: usize, collective: &str, why: &str) {
    assert_eq!(error.status, Status::Distributed, "{error}");
    let named = format!("threads {collective} failed on rank {rank} of 2");
    assert!(error.message.contains(&named), "{:?} lacks {named:?}", error.message);
    assert!(error.message.contains(why), "{:?} lacks {why:?}", error.message);
    assert!(error.message.starts_with("fp8rl_"), "{:?} is not the library's", error.message);
}

#[test]
fn a_failing_collective_fails_the_training_call_naming_it() {
    for collective in ["all_reduce_sum", "all_gather", "broadcast"] {
        let wrap = move |inner| Failing { inner, collective, failure: Failure::Error };
        let errors = run_ranks(2, wrap, |rank, communicator| train_one_step(rank, &communicator));
        for (rank, result) in errors.into_iter().enumerate() {
            let error = result.expect_err("the collective failed");
            expect_collective_error(&error, rank, collective, &format!("injected {collective} failure"));
        }
    }
}

#[test]
fn a_panicking_collective_is_an_error_not_an_abort() {
    let wrap = |inner| Failing { inner, collective: "broadcast", failure: Failure::Panic };
    let errors = run_ranks(2, wrap, |rank, communicator| {
        let first = train_one_step(rank, &communicator);
        // The panic poisoned the collectives: later calls fail too, saying so.
        (first, train_one_step(rank, &communicator))
    });
    for (rank, (first, second)) in errors.into_iter().enumerate() {
        expect_collective_error(
            &first.expect_err("it panicked"),
            rank,
            "broadcast",
            "panicked: injected broadcast panic",
        );
        let second = second.expect_err("still poisoned");
        assert_eq!(second.status, Status::Distributed);
        assert!(second.message.contains("an earlier collective on this communicator panicked"), "{second}");
    }
}

#[test]
fn master_weights_are_whole_again_after_gather_weights() {
    let results = run_ranks(
        2,
        |inner| inner,
        |rank, communicator| -> Result<()> {
            let context = Context::builder().num_threads(1).communicator(&communicator).build()?;
            let policy = Policy::random(&context, &tiny_config(), 1)?;
            let mut trainer =
                Trainer::new(&policy, &TrainerOptions::new().learning_rate(1e-2).group_size(GROUP as i32))?;
            grpo_step(&policy, &mut trainer, rank)?;
            let dir = TempDir::new(&format!("gather-{rank}"));
            // Each rank updated only its shard of the masters: they cannot be read yet.
            let error = expect_error(policy.save(dir.path(), DType::F32), Status::Distributed, "");
            assert_from_library(&error, "fp8rl_policy_save");
            trainer.gather_weights()?;
            policy.save(dir.path(), DType::F32)
        },
    );
    for result in results {
        result.expect("saved after gathering");
    }
}

/// Collectives that count how often they are dropped (one rank of one).
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl HostCollectives for Counted {
    fn all_reduce_sum(&mut self, _: SumBuffer<'_>) -> CollectiveResult {
        Ok(())
    }
    fn all_gather(&mut self, _: &mut [u8], _: &[usize]) -> CollectiveResult {
        Ok(())
    }
    fn broadcast(&mut self, _: &mut [u8], _: usize) -> CollectiveResult {
        Ok(())
    }
}

#[test]
fn the_collectives_live_as_long_as_the_last_reference() {
    let drops = Arc::new(AtomicUsize::new(0));
    let communicator = Communicator::from_collectives(0, 1, Counted(Arc::clone(&drops))).unwrap();
    assert_eq!((communicator.rank().unwrap(), communicator.world_size().unwrap()), (0, 1));
    let context = Context::builder().num_threads(1).communicator(&communicator).build().unwrap();
    drop(communicator); // the context keeps its own reference
    assert_eq!(drops.load(Ordering::SeqCst), 0, "dropped while the context uses them");
    assert_eq!((context.rank().unwrap(), context.world_size().unwrap()), (0, 1));
    drop(context);
    assert_eq!(drops.load(Ordering::SeqCst), 1, "not dropped exactly once with the last reference");

    let single = Context::builder().num_threads(1).build().unwrap();
    assert_eq!((single.rank().unwrap(), single.world_size().unwrap()), (0, 1), "no communicator: rank 0 of 1");
}

#[test]
fn bad_ranks_are_refused_and_the_collectives_dropped() {
    let drops = Arc::new(AtomicUsize::new(0));
    for (rank, world_size, field) in [(2, 2, "rank"), (0, 0, "world_size")] {
        let result = Communicator::from_collectives(rank, world_size, Counted(Arc::clone(&drops)));
        let error = expect_error(result, Status::InvalidArgument, field);
        assert_from_library(&error, "fp8rl_communicator_create_from_callbacks");
    }
    assert_eq!(drops.load(Ordering::SeqCst), 2, "a refused communicator leaked its collectives");
}

#[test]
fn policies_on_different_seeds_have_different_fingerprints() {
    let context = common::cpu();
    let fingerprint = |seed| Policy::random(&context, &tiny_config(), seed).unwrap().fingerprint().unwrap();
    assert_eq!(fingerprint(1), fingerprint(1));
    assert_ne!(fingerprint(1), fingerprint(2));
}

#[test]
fn nccl_needs_the_cuda_backend() {
    if build_features().unwrap().cuda() {
        eprintln!("note: a CUDA build; NCCL communicators are tested on the GPU machine");
        return;
    }
    assert_from_library(&expect_error(nccl_unique_id(), Status::Unsupported, ""), "fp8rl_nccl_unique_id");
    let result = Communicator::nccl(&[0; 128], 0, 1, 0, std::time::Duration::from_secs(10));
    assert_from_library(&expect_error(result, Status::Unsupported, ""), "fp8rl_communicator_create_nccl");
}
