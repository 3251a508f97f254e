//! Helpers shared by the integration tests.
#![allow(dead_code)] // each test binary uses its own subset

use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use fp8rl::{Backend, Context, Error, ModelConfig, Result, SamplingOptions, Status};

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

pub fn cpu() -> Context {
    Context::new(Backend::Cpu).expect("a CPU context")
}

/// Sampling with fixed-length completions.
pub fn sampling(max_new_tokens: i32) -> SamplingOptions {
    SamplingOptions::new().max_new_tokens(max_new_tokens).stop_at_eos(false)
}

/// Asserts `result` failed with `status` and a message containing `needle`.
#[track_caller]
pub fn expect_error<T: std::fmt::Debug>(result: Result<T>, status: Status, needle: &str) -> Error {
    let error = result.expect_err("the call should fail");
    assert_eq!(error.status, status, "wrong status: {error}");
    assert!(error.message.contains(needle), "message {:?} lacks {needle:?}", error.message);
    error
}

/// Asserts an error came from the library: its message starts with the C
/// function's name and is this thread's last error message.
#[track_caller]
pub fn assert_from_library(error: &Error, function: &str) {
    assert!(error.message.starts_with(&format!("{function}:")), "{:?} is not from {function}", error.message);
    assert_eq!(error.message, last_library_message());
}

/// Asserts an error was found by the binding, before any C call: its message
/// starts with the Rust method's name and the library's last message is not it.
#[track_caller]
pub fn assert_from_binding(error: &Error, method: &str) {
    assert_eq!(error.status, Status::InvalidArgument);
    assert!(error.message.starts_with(&format!("{method}:")), "{:?} is not from {method}", error.message);
    assert_ne!(error.message, last_library_message());
}

/// The calling thread's last error message of the library.
pub fn last_library_message() -> String {
    // SAFETY: never NULL; copied at once.
    unsafe { CStr::from_ptr(fp8rl::sys::fp8rl_last_error_message()) }.to_string_lossy().into_owned()
}

/// A fresh folder under the system's temporary folder, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("fp8rl-rust-{name}-{}-{unique}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The bit patterns of floats, for bitwise comparisons with readable failures.
pub fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|value| value.to_bits()).collect()
}
