//! Finds libfp8rl.so for linking, in this order:
//!
//! 1. `FP8RL_LIB_DIR`: a folder that holds libfp8rl.so (what the project's
//!    CTest run passes: the library of that very build);
//! 2. the installed pkg-config file `fp8rl.pc`;
//! 3. otherwise builds the library from this repository (the crate sits at
//!    `bindings/rust/fp8rl-sys`) with the `cmake` command into `OUT_DIR`.
//!    `FP8RL_CMAKE_ARGS` adds arguments to that configure step
//!    (e.g. `-DFP8RL_CUDA=OFF -G Ninja`).
//!
//! The folder is also baked in as an rpath, so tests and examples run without
//! `LD_LIBRARY_PATH`, and exported as `DEP_FP8RL_LIB_DIR` to dependants, whose
//! own build scripts must add the rpath for their binaries (cargo passes
//! `rustc-link-arg` only to this package's targets).

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    println!("cargo:rerun-if-env-changed=FP8RL_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=FP8RL_CMAKE_ARGS");
    println!("cargo:rerun-if-changed=build.rs");

    let lib_dir = from_env().or_else(from_pkg_config).unwrap_or_else(build_with_cmake);
    let lib_dir = lib_dir.display();
    println!("cargo:rustc-link-search=native={lib_dir}");
    println!("cargo:rustc-link-lib=dylib=fp8rl");
    if env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("windows") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{lib_dir}");
    }
    println!("cargo:lib_dir={lib_dir}");
}

fn from_env() -> Option<PathBuf> {
    let dir = PathBuf::from(env::var_os("FP8RL_LIB_DIR")?);
    if !dir.join("libfp8rl.so").exists() {
        // Not fatal (another platform names it otherwise), but worth a word.
        println!("cargo:warning=FP8RL_LIB_DIR={} holds no libfp8rl.so", dir.display());
    }
    Some(dir)
}

/// The folder `pkg-config` gives for fp8rl, if it knows the package.
fn from_pkg_config() -> Option<PathBuf> {
    let libs = command_output(Command::new("pkg-config").args(["--libs-only-L", "--libs", "fp8rl"]))?;
    let from_flags = libs.split_whitespace().find_map(|flag| flag.strip_prefix("-L")).map(PathBuf::from);
    // A library in a default folder comes without -L: ask for libdir then.
    from_flags.or_else(|| {
        command_output(Command::new("pkg-config").args(["--variable=libdir", "fp8rl"]))
            .map(|dir| PathBuf::from(dir.trim()))
    })
}

/// Builds the `fp8rl` target of this repository into OUT_DIR and returns the
/// folder that holds the library.
fn build_with_cmake() -> PathBuf {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir.join("../../..");
    if !root.join("capi/include/fp8rl/fp8rl.h").exists() {
        panic!(
            "libfp8rl not found: set FP8RL_LIB_DIR to the folder of libfp8rl.so, install fp8rl with its \
             pkg-config file, or build this crate from the fp8rl repository (expected at {})",
            root.display()
        );
    }
    let root = root.canonicalize().expect("the repository root exists");
    for source in ["CMakeLists.txt", "cmake", "capi", "core", "kernels"] {
        println!("cargo:rerun-if-changed={}", root.join(source).display());
    }

    let build = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("cmake-build");
    let mut configure = Command::new("cmake");
    configure
        .arg("-S")
        .arg(&root)
        .arg("-B")
        .arg(&build)
        .args(["-DCMAKE_BUILD_TYPE=Release", "-DFP8RL_BUILD_TESTS=OFF"])
        .args(["-DFP8RL_BUILD_BENCHMARKS=OFF", "-DFP8RL_BUILD_DOCS=OFF"]);
    if let Ok(extra) = env::var("FP8RL_CMAKE_ARGS") {
        configure.args(extra.split_whitespace());
    }
    run(&mut configure);
    let jobs = env::var("NUM_JOBS").unwrap_or_else(|_| "1".into());
    run(Command::new("cmake").arg("--build").arg(&build).args(["--target", "fp8rl", "--parallel", &jobs]));

    find_library(&build).unwrap_or_else(|| panic!("cmake built no libfp8rl.so under {}", build.display()))
}

/// The folder under `dir` that holds libfp8rl.so (capi/ in today's layout).
fn find_library(dir: &Path) -> Option<PathBuf> {
    if dir.join("libfp8rl.so").exists() {
        return Some(dir.to_path_buf());
    }
    let mut children: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.is_dir())
        .collect();
    children.sort(); // deterministic, and capi/ comes before the rest
    children.iter().find_map(|child| find_library(child))
}

/// Runs a command whose output goes to this script's stderr: stdout is
/// reserved for the `cargo:` instructions.
fn run(command: &mut Command) {
    let status = command
        .stdout(Stdio::from(std::io::stderr()))
        .status()
        .unwrap_or_else(|error| panic!("cannot run {command:?}: {error}"));
    assert!(status.success(), "{command:?} failed with {status}");
}

/// The stdout of a command that succeeded; None if it failed or is missing.
fn command_output(command: &mut Command) -> Option<String> {
    let output = command.stderr(Stdio::null()).output().ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}
