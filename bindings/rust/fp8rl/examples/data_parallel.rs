//! Data-parallel GRPO: ranks train one policy together, each on its own
//! prompts, and end every iteration with bitwise the same weights.
//!
//! Here the ranks are threads of one process and the collectives are this
//! file's [`ThreadCollectives`] (a [`HostCollectives`] over shared buffers),
//! so the example runs anywhere. Under `mpirun`, each process would instead
//! make its communicator from its MPI communicator's Fortran handle, e.g.
//! with rsmpi:
//!
//! ```ignore
//! use mpi::raw::AsRaw;
//! let world = mpi::initialize().expect("MPI").world();
//! let handle = unsafe { mpi::ffi::RSMPI_Comm_c2f(world.as_raw()) }; // MPI_Comm_c2f
//! let communicator = Communicator::from_mpi_fortran_handle(handle.into())?;
//! ```
//!
//! and run [`train_rank`] with it (libfp8rl_mpi, built against the same MPI,
//! beside libfp8rl or named by `FP8RL_MPI_LIBRARY`).
//!
//! Usage: `cargo run --example data_parallel [RANKS]` (default 2). Each rank
//! prints its rewards and the policy's fingerprint after every iteration;
//! exits 1 unless the fingerprints agree.

use std::sync::{Arc, Barrier, Mutex};

use fp8rl::{
    CollectiveResult, Communicator, Context, HostCollectives, ImportanceMode, ImportanceOptions, IterationMetrics,
    ModelConfig, Policy, Recipe, SamplingOptions, Sequences, SumBuffer, Trainer, TrainerOptions,
};

/// Completions per prompt: a GRPO group (never split between ranks).
pub const GROUP: usize = 4;
/// Distinct prompts each rank generates for, per iteration.
pub const PROMPTS_PER_RANK: usize = 2;
/// Tokens per completion.
pub const NEW_TOKENS: usize = 6;
/// The reward is the fraction of completion tokens equal to this one.
const TARGET: i32 = 7;

/// What one rank saw.
#[derive(Debug, Clone)]
pub struct RankOutcome {
    /// The rank and world size the context reported.
    pub rank: usize,
    /// The world size the context reported.
    pub world_size: usize,
    /// The policy's fingerprint after the trainer was made (rank 0's weights), then after each iteration.
    pub fingerprints: Vec<u64>,
    /// Each iteration's metrics (global: the same on every rank, except the byte counts).
    pub iterations: Vec<IterationMetrics>,
}

/// The tiny Llama of examples/rl_loop.c.
pub fn tiny_config() -> ModelConfig {
    ModelConfig::new()
        .vocab_size(32)
        .hidden_size(64)
        .num_layers(2)
        .num_attention_heads(4)
        .num_key_value_heads(2)
        .intermediate_size(128)
        .max_position_embeddings(32)
}

/// One rank's training: `iterations` GRPO iterations on its own prompts.
///
/// Every rank starts from a different random policy: the trainer starts
/// them all from rank 0's weights.
pub fn train_rank(communicator: &Communicator, iterations: usize) -> fp8rl::Result<RankOutcome> {
    let context = Context::builder().num_threads(1).communicator(communicator).build()?;
    let (rank, world_size) = (context.rank()?, context.world_size()?);
    let policy = Policy::random(&context, &tiny_config(), 1 + rank as u64)?;
    policy.set_recipe(&Recipe::fp8_full())?;
    let options = TrainerOptions::new()
        .learning_rate(1e-2)
        .group_size(GROUP as i32)
        .minibatches(2)
        .importance(ImportanceOptions::new().mode(ImportanceMode::Truncated));
    let mut trainer = Trainer::new(&policy, &options)?;
    let sampling = SamplingOptions::new().max_new_tokens(NEW_TOKENS as i32).stop_at_eos(false);

    let mut outcome = RankOutcome { rank, world_size, fingerprints: vec![policy.fingerprint()?], iterations: vec![] };
    for iteration in 0..iterations {
        // This rank's prompts (GROUP copies of each): different on every rank.
        let prompts: Vec<[i32; 4]> = (0..PROMPTS_PER_RANK * GROUP)
            .map(|i| {
                let prompt = rank * PROMPTS_PER_RANK + i / GROUP;
                std::array::from_fn(|j| 8 + ((iteration * 5 + prompt * 3 + j) % 24) as i32)
            })
            .collect();
        let seeds = trainer.next_seeds(prompts.len())?; // one seed stream over all ranks
        let rollout = policy.generate(&prompts, &seeds, &sampling)?;
        let mut sequences = Sequences::new();
        let (mut logp_gen, mut rewards) = (Vec::new(), Vec::new());
        for (prompt, completion) in prompts.iter().zip(&rollout) {
            sequences.push(prompt, completion.tokens);
            logp_gen.extend_from_slice(completion.logprobs);
            let hits = completion.tokens.iter().filter(|&&token| token == TARGET).count();
            rewards.push(hits as f32 / completion.tokens.len() as f32);
        }
        let metrics = trainer.iterate(&sequences.batch().logp_gen(&logp_gen).rewards(&rewards))?;
        outcome.fingerprints.push(policy.fingerprint()?);
        println!(
            "rank {rank}/{world_size}  iteration {iteration}  reward {:.3}  token_mult_prob_error {:.6}  \
             reduced {} B  gathered {} B  fingerprint {:016x}",
            metrics.total.reward_mean,
            metrics.total.token_mult_prob_error,
            metrics.total.bytes_reduced,
            metrics.total.bytes_gathered,
            outcome.fingerprints.last().unwrap()
        );
        outcome.iterations.push(metrics);
    }
    // Whole master weights again on every rank, before the policy is used on its own.
    trainer.gather_weights()?;
    Ok(outcome)
}

/// Runs `world_size` ranks as threads, each over its own [`ThreadCollectives`];
/// the outcomes in rank order.
pub fn run(world_size: usize, iterations: usize) -> fp8rl::Result<Vec<RankOutcome>> {
    let hub = Hub::new(world_size);
    let ranks: Vec<_> = (0..world_size)
        .map(|rank| {
            let collectives = ThreadCollectives::new(&hub, rank);
            std::thread::spawn(move || {
                let communicator = Communicator::from_collectives(rank, world_size, collectives)?;
                train_rank(&communicator, iterations)
            })
        })
        .collect();
    ranks.into_iter().map(|rank| rank.join().expect("a rank panicked")).collect()
}

/// What the ranks of one process share: a barrier and one posted buffer per rank.
pub struct Hub {
    barrier: Barrier,
    posted: Mutex<Vec<Posted>>,
}

/// A rank's contribution to the collective in progress.
#[derive(Clone, Default)]
enum Posted {
    #[default]
    Nothing,
    F32(Vec<f32>),
    F64(Vec<f64>),
    I64(Vec<i64>),
    Bytes(Vec<u8>),
}

impl Hub {
    /// A hub for `world_size` ranks.
    pub fn new(world_size: usize) -> Arc<Self> {
        Arc::new(Self { barrier: Barrier::new(world_size), posted: Mutex::new(vec![Posted::Nothing; world_size]) })
    }

    /// Posts this rank's buffer, waits for all, returns everyone's, and
    /// waits for all again (so no rank posts the next one while another reads).
    fn exchange(&self, rank: usize, mine: Posted) -> Vec<Posted> {
        self.posted.lock().unwrap()[rank] = mine;
        self.barrier.wait();
        let all = self.posted.lock().unwrap().clone();
        self.barrier.wait();
        all
    }
}

/// One rank's collectives over a [`Hub`]: ranks as threads of one process.
/// Sums run in rank order, so every rank computes the same bits.
pub struct ThreadCollectives {
    hub: Arc<Hub>,
    rank: usize,
}

impl ThreadCollectives {
    /// Rank `rank`'s collectives over `hub`.
    pub fn new(hub: &Arc<Hub>, rank: usize) -> Self {
        Self { hub: Arc::clone(hub), rank }
    }
}

/// The element types the ranks sum, and how they are posted.
trait Summed: Copy + std::ops::Add<Output = Self> {
    fn post(values: Vec<Self>) -> Posted;
    fn take(posted: Posted) -> Option<Vec<Self>>;
}

impl Summed for f32 {
    fn post(values: Vec<Self>) -> Posted {
        Posted::F32(values)
    }
    fn take(posted: Posted) -> Option<Vec<Self>> {
        if let Posted::F32(values) = posted {
            Some(values)
        } else {
            None
        }
    }
}

impl Summed for f64 {
    fn post(values: Vec<Self>) -> Posted {
        Posted::F64(values)
    }
    fn take(posted: Posted) -> Option<Vec<Self>> {
        if let Posted::F64(values) = posted {
            Some(values)
        } else {
            None
        }
    }
}

impl Summed for i64 {
    fn post(values: Vec<Self>) -> Posted {
        Posted::I64(values)
    }
    fn take(posted: Posted) -> Option<Vec<Self>> {
        if let Posted::I64(values) = posted {
            Some(values)
        } else {
            None
        }
    }
}

impl ThreadCollectives {
    /// `data` = its sum over the ranks, added in rank order.
    fn sum<T: Summed>(&self, data: &mut [T]) -> CollectiveResult {
        let all = self.hub.exchange(self.rank, T::post(data.to_vec()));
        let parts: Vec<Vec<T>> = all.into_iter().map(T::take).collect::<Option<_>>().ok_or(DISAGREE)?;
        for (i, value) in data.iter_mut().enumerate() {
            *value = parts[1..].iter().fold(parts[0][i], |sum, part| sum + part[i]);
        }
        Ok(())
    }
}

const DISAGREE: &str = "the ranks are in different collectives";

impl HostCollectives for ThreadCollectives {
    fn name(&self) -> Option<&str> {
        Some("threads")
    }

    fn all_reduce_sum(&mut self, data: SumBuffer<'_>) -> CollectiveResult {
        match data {
            SumBuffer::F32(data) => self.sum(data),
            SumBuffer::F64(data) => self.sum(data),
            SumBuffer::I64(data) => self.sum(data),
        }
    }

    fn all_gather(&mut self, data: &mut [u8], counts: &[usize]) -> CollectiveResult {
        let all = self.hub.exchange(self.rank, Posted::Bytes(data.to_vec()));
        let mut start = 0;
        for (part, count) in all.into_iter().zip(counts) {
            let Posted::Bytes(part) = part else { return Err(DISAGREE.into()) };
            data[start..start + count].copy_from_slice(&part[start..start + count]);
            start += count;
        }
        Ok(())
    }

    fn broadcast(&mut self, data: &mut [u8], root: usize) -> CollectiveResult {
        let all = self.hub.exchange(self.rank, Posted::Bytes(data.to_vec()));
        let Posted::Bytes(root_data) = &all[root] else { return Err(DISAGREE.into()) };
        data.copy_from_slice(root_data);
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let world_size = match std::env::args().nth(1) {
        Some(ranks) => ranks.parse()?,
        None => 2,
    };
    let outcomes = run(world_size, 3)?;
    let agree = outcomes.iter().all(|outcome| outcome.fingerprints == outcomes[0].fingerprints);
    println!("{world_size} ranks: the fingerprints {}", if agree { "agree" } else { "DIFFER" });
    if !agree {
        std::process::exit(1);
    }
    Ok(())
}
