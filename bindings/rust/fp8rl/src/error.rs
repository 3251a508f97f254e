//! Errors: the library's status plus its message.

use std::ffi::CStr;
use std::fmt;

use fp8rl_sys as sys;

c_enum! {
    /// The status of a call (`fp8rl_status`). Errors carry one of the non-`Ok` values.
    pub enum Status {
        /// Success.
        Ok = sys::FP8RL_OK,
        /// A bad size, an out-of-range value, inconsistent slice lengths.
        InvalidArgument = sys::FP8RL_ERROR_INVALID_ARGUMENT,
        /// A host or device allocation failed.
        OutOfMemory = sys::FP8RL_ERROR_OUT_OF_MEMORY,
        /// The requested backend is not built or has no device.
        BackendUnavailable = sys::FP8RL_ERROR_BACKEND_UNAVAILABLE,
        /// NaN or Inf where finite values are required.
        NonFinite = sys::FP8RL_ERROR_NON_FINITE,
        /// A file could not be read or written.
        Io = sys::FP8RL_ERROR_IO,
        /// A file or buffer is malformed.
        CorruptData = sys::FP8RL_ERROR_CORRUPT_DATA,
        /// An options struct is from an incompatible header.
        VersionMismatch = sys::FP8RL_ERROR_VERSION_MISMATCH,
        /// A valid request this build or backend does not support.
        Unsupported = sys::FP8RL_ERROR_UNSUPPORTED,
        /// A CUDA or cuBLASLt call failed.
        Cuda = sys::FP8RL_ERROR_CUDA,
        /// A bug in fp8rl: please report it.
        Internal = sys::FP8RL_ERROR_INTERNAL,
        /// A collective failed: a peer died, timed out or called out of order.
        Distributed = sys::FP8RL_ERROR_DISTRIBUTED,
    }
}

impl Status {
    /// The C constant's name, e.g. `"FP8RL_ERROR_INVALID_ARGUMENT"`
    /// (`"FP8RL_STATUS_UNKNOWN"` for values the library does not know).
    pub fn name(self) -> &'static str {
        // SAFETY: fp8rl_status_name accepts any value and returns a static string.
        let name = unsafe { CStr::from_ptr(sys::fp8rl_status_name(self.as_raw())) };
        name.to_str().unwrap_or("FP8RL_STATUS_UNKNOWN")
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed call: the status and what went wrong.
///
/// Errors from the library carry its message, which starts with the C
/// function's name (`"fp8rl_policy_generate: prompt 1, position 2: ..."`);
/// errors the binding finds before calling C (inconsistent slice lengths)
/// carry [`Status::InvalidArgument`] and start with the Rust method's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// Why the call failed; never [`Status::Ok`].
    pub status: Status,
    /// What went wrong, for a human.
    pub message: String,
}

/// The result of every fallible call.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error the binding reports itself, before any C call.
    pub(crate) fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(Status::InvalidArgument, message)
    }

    /// An error the binding reports itself with another status.
    pub(crate) fn new(status: Status, message: impl Into<String>) -> Self {
        Self { status, message: message.into() }
    }

    /// The error of a failed C call: its status and the calling thread's last message.
    fn from_library(status: sys::fp8rl_status) -> Self {
        // SAFETY: never NULL; valid until the next fp8rl call on this thread,
        // and copied before that.
        let message = unsafe { CStr::from_ptr(sys::fp8rl_last_error_message()) };
        let message = message.to_string_lossy().into_owned();
        let status = Status::from_raw(status);
        let message = if message.is_empty() { format!("({} without a message)", status.name()) } else { message };
        Self { status, message }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}]", self.message, self.status)
    }
}

impl std::error::Error for Error {}

/// Turns a C status into a `Result`, reading the message right away (it is
/// per thread and overwritten by the next failing call).
pub(crate) fn check(status: sys::fp8rl_status) -> Result<()> {
    if status == sys::FP8RL_OK {
        Ok(())
    } else {
        Err(Error::from_library(status))
    }
}
