//! The example RL loop learns, and generates exactly what the C example does.
//!
//! When `FP8RL_RL_LOOP_EXAMPLE` names the C program (examples/rl_loop.c; the
//! project's CTest run sets it), both write their completions, step after
//! step, and the files must match token for token.

mod common;

#[path = "../examples/rl_loop.rs"]
#[allow(dead_code)] // its main() is for `cargo run --example`
mod rl_loop;

use common::TempDir;

#[test]
fn the_rl_loop_learns_and_matches_the_c_example_token_for_token() {
    let mut completions = Vec::new();
    let outcome = rl_loop::run(Some(&mut completions)).expect("the loop runs");
    assert!(
        outcome.learned(),
        "mean reward {:.3} -> {:.3}: did not rise by 0.3",
        outcome.first_reward,
        outcome.last_reward
    );
    let rust = String::from_utf8(completions).unwrap();
    assert_eq!(rust.lines().count(), 20 * 16, "20 steps of 16 completions");

    let Some(c_example) = std::env::var_os("FP8RL_RL_LOOP_EXAMPLE") else {
        eprintln!("note: FP8RL_RL_LOOP_EXAMPLE is not set; skipped the comparison with the C example");
        return;
    };
    let dir = TempDir::new("rl-loop");
    let path = dir.join("c_completions.txt");
    let status = std::process::Command::new(&c_example).arg(&path).stdout(std::process::Stdio::null()).status();
    let status = status.unwrap_or_else(|error| panic!("cannot run {c_example:?}: {error}"));
    assert!(status.success(), "{c_example:?} failed: {status}");
    let c = std::fs::read_to_string(&path).unwrap();
    for (line, (rust, c)) in rust.lines().zip(c.lines()).enumerate() {
        assert_eq!(rust, c, "step {}, completion {}: Rust and C differ", line / 16, line % 16);
    }
    assert_eq!(rust.lines().count(), c.lines().count());
}
