//! Raw FFI declarations of libfp8rl, the C API of fp8rl (`fp8rl/fp8rl.h`).
//!
//! Everything here is generated from the header by `bindings/gen/generate.py`
//! (see `bindings.rs`): the `#define` constants, every enum as an `i32` alias
//! with one constant per value (so a value a newer library adds is never
//! undefined behaviour), the opaque handles, the `#[repr(C)]` structs and
//! every function. The header's documentation is the reference for each.
//!
//! The tables [`LAYOUT`], [`VALUES`] and [`FUNCTIONS`] list every size, field
//! offset, value and function declared here; the crate's tests compare them
//! with what the C compiler and the loaded library report.
//!
//! Use the safe `fp8rl` crate unless you need the raw calls. Linking: see the
//! build script (`FP8RL_LIB_DIR`, pkg-config, or a CMake build of the repository).
#![no_std]
#![allow(non_camel_case_types, non_upper_case_globals)]

include!("bindings.rs");
