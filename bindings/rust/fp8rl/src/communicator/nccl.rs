//! NCCL communicators over GPU memory (CUDA builds with libnccl.so.2 at run time).

use std::time::Duration;

use fp8rl_sys as sys;

use super::Communicator;
use crate::args::to_i32;
use crate::error::{check, Result};

/// The 128 bytes that name one NCCL group: made by [`nccl_unique_id`] on one
/// rank and handed to every rank by the host's own means.
pub type NcclUniqueId = [u8; 128];

/// A new NCCL unique id (`fp8rl_nccl_unique_id`): call it on one rank and
/// send the bytes to all. Fails with [`Status::Unsupported`](crate::Status::Unsupported)
/// on a build without the CUDA backend and with
/// [`Status::BackendUnavailable`](crate::Status::BackendUnavailable) when
/// libnccl.so.2 cannot be loaded.
pub fn nccl_unique_id() -> Result<NcclUniqueId> {
    let mut id = [0u8; 128];
    // SAFETY: 128 writable bytes.
    check(unsafe { sys::fp8rl_nccl_unique_id(id.as_mut_ptr()) })?;
    Ok(id)
}

impl Communicator {
    /// An NCCL communicator (`fp8rl_communicator_create_nccl`): every rank
    /// calls it with the same `id`, and it returns when all `world_size` have
    /// joined. The context given it must run on the CUDA backend on
    /// `cuda_device`. A collective that does not complete within `timeout` (a
    /// dead or out-of-order peer) is aborted and fails with
    /// [`Status::Distributed`](crate::Status::Distributed).
    ///
    /// Fails with [`Status::Unsupported`](crate::Status::Unsupported) on a
    /// build without the CUDA backend, and with
    /// [`Status::BackendUnavailable`](crate::Status::BackendUnavailable)
    /// without NCCL or the device.
    pub fn nccl(
        id: &NcclUniqueId,
        rank: usize,
        world_size: usize,
        cuda_device: i32,
        timeout: Duration,
    ) -> Result<Self> {
        let (rank, world_size) =
            (to_i32("Communicator::nccl: rank", rank)?, to_i32("Communicator::nccl: world_size", world_size)?);
        let mut raw = std::ptr::null_mut();
        // SAFETY: 128 readable bytes and a valid out-pointer.
        check(unsafe {
            sys::fp8rl_communicator_create_nccl(
                id.as_ptr(),
                rank,
                world_size,
                cuda_device,
                timeout.as_secs_f64(),
                &mut raw,
            )
        })?;
        Ok(Self::from_raw(raw))
    }
}
