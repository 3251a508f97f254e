//! Adds the folder fp8rl-sys linked libfp8rl from as an rpath of this crate's
//! tests, examples and doctests: cargo passes fp8rl-sys's own link arguments
//! only to that package's targets, and its `links` metadata reaches us as
//! DEP_FP8RL_LIB_DIR.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_FP8RL_LIB_DIR");
    if let Ok(dir) = std::env::var("DEP_FP8RL_LIB_DIR") {
        if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("windows") {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        }
    }
}
