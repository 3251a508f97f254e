//! What a policy and its trainer hold in memory.

use fp8rl_sys as sys;

c_output! {
    /// Bytes a policy (and its trainer) hold, by component (`fp8rl_memory_report`).
    pub struct MemoryReport: sys::fp8rl_memory_report = sys::fp8rl_memory_report_init {
        /// FP32 master weights (host).
        master_weights: i64,
        /// The recipe's compute copies on the backend (BF16 / E4M3 codes and scales).
        compute_weights: i64,
        /// Trainer: FP32 gradients on the backend (0 for a policy).
        gradients: i64,
        /// Trainer: AdamW moments (host) (0 for a policy).
        optimizer_state: i64,
        /// Trainer: the transposed compute copies its backward pass reads (0 for a policy).
        backward_weights: i64,
    }
}
