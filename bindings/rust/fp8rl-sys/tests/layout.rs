//! The declarations against the C compiler and the loaded library.
//!
//! The layout probe (tests/bindings/layout_probe.c, generated from the same
//! header model as bindings.rs) prints what the C compiler says: `size T n`,
//! `field T.f offset size` and `value NAME v`. Every line must match LAYOUT or
//! VALUES, and every entry of LAYOUT and VALUES must have been checked by a
//! line, so neither side can silently lose a struct, field or constant.
//! The probe comes from `FP8RL_LAYOUT_PROBE` (the project's CTest run passes
//! the one it built), or is compiled here with `cc`.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_char, c_void, CString};
use std::path::PathBuf;
use std::process::Command;

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

/// The probe's output, from `FP8RL_LAYOUT_PROBE` or a probe compiled now.
fn probe_output() -> String {
    let probe = match std::env::var_os("FP8RL_LAYOUT_PROBE") {
        Some(path) => PathBuf::from(path),
        None => compile_probe(),
    };
    let output = Command::new(&probe)
        .output()
        .unwrap_or_else(|error| panic!("cannot run the layout probe {}: {error}", probe.display()));
    assert!(output.status.success(), "{} failed: {}", probe.display(), output.status);
    String::from_utf8(output.stdout).expect("the probe prints ASCII")
}

fn compile_probe() -> PathBuf {
    let root = repository_root();
    let dir = std::env::temp_dir().join(format!("fp8rl-sys-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let probe = dir.join("layout_probe");
    let status = Command::new("cc")
        .arg("-std=c99")
        .arg("-I")
        .arg(root.join("capi/include"))
        .arg(root.join("tests/bindings/layout_probe.c"))
        .arg("-o")
        .arg(&probe)
        .status()
        .expect("the `cc` command (or set FP8RL_LAYOUT_PROBE)");
    assert!(status.success(), "compiling layout_probe.c failed");
    probe
}

#[test]
fn every_size_offset_and_value_matches_the_c_compiler() {
    let layout: BTreeMap<&str, (usize, usize)> =
        fp8rl_sys::LAYOUT.iter().map(|&(name, offset, size)| (name, (offset, size))).collect();
    let values: BTreeMap<&str, i64> = fp8rl_sys::VALUES.iter().copied().collect();
    assert_eq!(layout.len(), fp8rl_sys::LAYOUT.len(), "LAYOUT names a fact twice");
    assert_eq!(values.len(), fp8rl_sys::VALUES.len(), "VALUES names a constant twice");

    let output = probe_output();
    let (mut errors, mut seen_layout, mut seen_values) = (Vec::new(), BTreeSet::new(), BTreeSet::new());
    for line in output.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let numbers: Vec<i64> = words.iter().skip(2).map(|word| word.parse().expect("a number")).collect();
        match (words.first().copied(), words.get(1).copied(), numbers.as_slice()) {
            (Some("size"), Some(name), &[size]) => {
                seen_layout.insert(name);
                if layout.get(name) != Some(&(0, size as usize)) {
                    errors.push(format!("sizeof({name}): C {size}, Rust {:?}", layout.get(name)));
                }
            }
            (Some("field"), Some(name), &[offset, size]) => {
                seen_layout.insert(name);
                if layout.get(name) != Some(&(offset as usize, size as usize)) {
                    errors.push(format!("{name}: C offset/size {offset}/{size}, Rust {:?}", layout.get(name)));
                }
            }
            (Some("value"), Some(name), &[value]) => {
                seen_values.insert(name);
                if values.get(name) != Some(&value) {
                    errors.push(format!("{name}: C {value}, Rust {:?}", values.get(name)));
                }
            }
            _ => errors.push(format!("unexpected probe line {line:?}")),
        }
    }
    // And the other direction: nothing declared in Rust escaped the probe.
    errors.extend(
        layout
            .keys()
            .filter(|name| !seen_layout.contains(*name))
            .map(|name| format!("{name} not checked by the probe")),
    );
    errors.extend(
        values
            .keys()
            .filter(|name| !seen_values.contains(*name))
            .map(|name| format!("{name} not checked by the probe")),
    );

    assert!(errors.is_empty(), "{} layout mismatches:\n{}", errors.len(), errors.join("\n"));
    println!("{} facts checked", output.lines().count());
}

// dlsym from the C library (glibc >= 2.34 has it in libc itself, which std links).
extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}
/// glibc's RTLD_DEFAULT: search the global scope (the program and its libraries).
const RTLD_DEFAULT: *mut c_void = std::ptr::null_mut();

#[test]
fn every_declared_function_is_exported_by_the_library() {
    // A call makes libfp8rl a needed library of this test (the linker drops
    // unused ones), so its symbols are in the global scope.
    assert_eq!(unsafe { fp8rl_sys::fp8rl_version() }, fp8rl_sys::FP8RL_VERSION);
    let missing: Vec<&str> = fp8rl_sys::FUNCTIONS
        .iter()
        .copied()
        .filter(|name| {
            let symbol = CString::new(*name).expect("no NUL in a name");
            unsafe { dlsym(RTLD_DEFAULT, symbol.as_ptr()) }.is_null()
        })
        .collect();
    assert!(missing.is_empty(), "not exported by the loaded libfp8rl: {missing:?}");
    assert!(fp8rl_sys::FUNCTIONS.len() > 50, "FUNCTIONS looks truncated");
}
