//! Versions and build features: what was loaded, and what it can do.

use std::ffi::CStr;

use fp8rl_sys as sys;

use crate::error::{check, Result};

/// The version of the header these bindings were generated from, encoded as
/// major * 10000 + minor * 100 + patch; compare with [`version()`].
pub const HEADER_VERSION: u32 = sys::FP8RL_VERSION;

/// The version of the loaded library, encoded like [`HEADER_VERSION`].
pub fn version() -> u32 {
    // SAFETY: no arguments; thread-safe.
    unsafe { sys::fp8rl_version() }
}

/// The version of the loaded library as `"major.minor.patch"`.
pub fn version_string() -> &'static str {
    // SAFETY: a static NUL-terminated string, never NULL.
    let version = unsafe { CStr::from_ptr(sys::fp8rl_version_string()) };
    version.to_str().unwrap_or("?")
}

/// Optional features of this build on this machine (`fp8rl_feature` bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Features(u32);

impl Features {
    /// The raw bitwise OR of `fp8rl_feature` values.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// The CUDA backend is compiled in.
    pub fn cuda(self) -> bool {
        self.has(sys::FP8RL_FEATURE_CUDA)
    }

    /// This CPU runs the AVX2 kernels.
    pub fn avx2(self) -> bool {
        self.has(sys::FP8RL_FEATURE_AVX2)
    }

    /// This CPU runs the AVX-512 kernels.
    pub fn avx512(self) -> bool {
        self.has(sys::FP8RL_FEATURE_AVX512)
    }

    fn has(self, feature: sys::fp8rl_feature) -> bool {
        self.0 & feature as u32 != 0
    }
}

/// Which optional features this build and this machine offer.
pub fn build_features() -> Result<Features> {
    let mut bits = 0u32;
    // SAFETY: a valid out-pointer; thread-safe.
    check(unsafe { sys::fp8rl_build_features(&mut bits) })?;
    Ok(Features(bits))
}
