//! Communicators: the ranks that train one policy together (`fp8rl_communicator`).
//!
//! A [`Context`](crate::Context) built with a communicator
//! ([`ContextBuilder::communicator`](crate::ContextBuilder::communicator))
//! makes its trainers data-parallel: each rank generates and trains on its own
//! rollouts, gradients are summed over the ranks, and every rank ends each
//! step with bitwise the same compute weights ([`Policy::fingerprint`](crate::Policy::fingerprint)
//! shows it). The library opens no sockets of its own; a communicator carries
//! the collectives, in one of three kinds:
//!
//! - the host's own collectives: [`Communicator::from_collectives`] over a
//!   [`HostCollectives`] implementation (a simulator's transport, threads of
//!   one process, torch.distributed behind some bridge);
//! - MPI over host memory: [`Communicator::from_mpi_fortran_handle`], through
//!   the companion library libfp8rl_mpi, loaded when first asked for;
//! - NCCL over GPU memory: [`nccl_unique_id`] on one rank, the bytes sent to
//!   the others by the host's own means, then [`Communicator::nccl`] on every rank.
//!
//! Every rank must make the same training calls in the same order: the
//! collectives inside them must match.

mod host;
mod mpi;
mod nccl;

use std::fmt;
use std::ptr::NonNull;

use fp8rl_sys as sys;

use crate::error::{check, Result};

pub use host::{CollectiveResult, HostCollectives, SumBuffer};
pub use nccl::{nccl_unique_id, NcclUniqueId};

/// A group of ranks that train one policy together (`fp8rl_communicator`).
///
/// Give it to [`ContextBuilder::communicator`](crate::ContextBuilder::communicator);
/// the context keeps its own reference, so the communicator may be dropped
/// once the context is built (the collectives then live as long as the context).
pub struct Communicator {
    raw: NonNull<sys::fp8rl_communicator>,
}

// SAFETY: the header documents fp8rl_communicator_get_rank and the contexts'
// use of a communicator as thread-safe; fp8rl_communicator_destroy, the one
// function that is not, only runs from `Drop`, which owns the handle. Host
// collectives are `Send` and called under a mutex (see host.rs), so whichever
// thread runs them, or drops them with the last reference, is fine.
unsafe impl Send for Communicator {}
// SAFETY: see `Send`: shared references only reach the thread-safe functions.
unsafe impl Sync for Communicator {}

impl Communicator {
    /// Takes ownership of a handle a C constructor returned.
    fn from_raw(raw: *mut sys::fp8rl_communicator) -> Self {
        let raw = NonNull::new(raw).expect("fp8rl created a NULL communicator");
        Self { raw }
    }

    /// This process's rank, in [0, world size).
    pub fn rank(&self) -> Result<usize> {
        let mut rank = 0;
        // SAFETY: a valid communicator; the world size may be NULL.
        check(unsafe { sys::fp8rl_communicator_get_rank(self.raw.as_ptr(), &mut rank, std::ptr::null_mut()) })?;
        Ok(usize::try_from(rank).unwrap_or(0))
    }

    /// The number of ranks (>= 1).
    pub fn world_size(&self) -> Result<usize> {
        let mut world_size = 0;
        // SAFETY: a valid communicator; the rank may be NULL.
        check(unsafe { sys::fp8rl_communicator_get_rank(self.raw.as_ptr(), std::ptr::null_mut(), &mut world_size) })?;
        Ok(usize::try_from(world_size).unwrap_or(0))
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::fp8rl_communicator {
        self.raw.as_ptr()
    }
}

impl Drop for Communicator {
    fn drop(&mut self) {
        // SAFETY: we own this reference; contexts keep their own. It cannot fail.
        unsafe { sys::fp8rl_communicator_destroy(self.raw.as_ptr()) };
    }
}

impl fmt::Debug for Communicator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Communicator")
            .field("rank", &self.rank().ok())
            .field("world_size", &self.world_size().ok())
            .finish()
    }
}
