//! The host's own collectives (`fp8rl_collective_callbacks`): a Rust trait
//! behind `extern "C"` trampolines.
//!
//! The implementation is boxed, behind a mutex, as the callbacks' `user_data`;
//! the library frees it through the `destroy` callback when the last
//! reference to the communicator goes (the handle and every context using
//! it). Nothing unwinds into C: an `Err` or a panic becomes a non-zero return
//! plus a message the library reads back through `error_message`.

use std::any::Any;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use fp8rl_sys as sys;

use super::Communicator;
use crate::args::to_i32;
use crate::error::{check, Error, Result};

/// What a collective returns: `Err` fails the training call that ran it with
/// [`Status::Distributed`](crate::Status::Distributed), its message naming the
/// collective, the rank and this error.
pub type CollectiveResult = std::result::Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// A buffer the ranks sum element-wise, in place, in its C element type.
#[derive(Debug)]
pub enum SumBuffer<'a> {
    /// `float` elements.
    F32(&'a mut [f32]),
    /// `double` elements.
    F64(&'a mut [f64]),
    /// `int64_t` elements.
    I64(&'a mut [i64]),
}

/// Collectives over host memory that the host implements, all in place
/// (the C API's `fp8rl_collective_callbacks`).
///
/// Every rank calls the same collectives in the same order with the same
/// sizes. The varying-size collectives take `counts[world_size]`: rank r's
/// part of the buffer comes after the parts of ranks 0..r, and is
/// `counts[r]` elements long (bytes for [`all_gather`](Self::all_gather)).
/// Methods run on the thread that makes the training call, one at a time (a
/// mutex guards the implementation). Returning `Err`, or panicking, fails the
/// training call with [`Status::Distributed`](crate::Status::Distributed);
/// the panic does not unwind into C, and later calls fail too.
///
/// Sum in the same order on every rank (rank 0's value first, say): the
/// library relies on every rank computing bitwise the same sums.
pub trait HostCollectives: Send + 'static {
    /// Whether [`reduce_scatter_sum`](Self::reduce_scatter_sum) is implemented.
    /// `false` (the default): the library sums the whole buffer with
    /// [`all_reduce_sum`](Self::all_reduce_sum) instead.
    const HAS_REDUCE_SCATTER_SUM: bool = false;
    /// Whether [`barrier`](Self::barrier) is implemented. `false` (the
    /// default): the library all-reduces one value instead.
    const HAS_BARRIER: bool = false;

    /// A short name for messages and the context's description, e.g.
    /// `"torch.distributed"`; `None` (the default): the library's own.
    fn name(&self) -> Option<&str> {
        None
    }

    /// `data` = its element-wise sum over the ranks.
    fn all_reduce_sum(&mut self, data: SumBuffer<'_>) -> CollectiveResult;

    /// Rank r's part of `data` = that part's element-wise sum over the ranks;
    /// the rest of `data` is unspecified afterwards. `counts` are in elements.
    /// Called only when [`HAS_REDUCE_SCATTER_SUM`](Self::HAS_REDUCE_SCATTER_SUM) is true.
    fn reduce_scatter_sum(&mut self, data: SumBuffer<'_>, counts: &[usize]) -> CollectiveResult {
        let _ = (data, counts);
        Err("HAS_REDUCE_SCATTER_SUM is true but reduce_scatter_sum is not implemented".into())
    }

    /// Every rank receives every rank's part of `data`; `counts` are in bytes.
    fn all_gather(&mut self, data: &mut [u8], counts: &[usize]) -> CollectiveResult;

    /// `data` = rank `root`'s `data`.
    fn broadcast(&mut self, data: &mut [u8], root: usize) -> CollectiveResult;

    /// Returns when every rank has called it. Called only when
    /// [`HAS_BARRIER`](Self::HAS_BARRIER) is true.
    fn barrier(&mut self) -> CollectiveResult {
        Err("HAS_BARRIER is true but barrier is not implemented".into())
    }
}

impl Communicator {
    /// A communicator over the host's own collectives
    /// (`fp8rl_communicator_create_from_callbacks`): this process is rank
    /// `rank` of `world_size`.
    ///
    /// The communicator owns `collectives` and drops them when its last
    /// reference goes (this value and every context built with it). A rank
    /// outside [0, world_size) fails with
    /// [`Status::InvalidArgument`](crate::Status::InvalidArgument).
    pub fn from_collectives<T: HostCollectives>(rank: usize, world_size: usize, collectives: T) -> Result<Self> {
        const FUNCTION: &str = "Communicator::from_collectives";
        let c_rank = to_i32(&format!("{FUNCTION}: rank"), rank)?;
        let c_world_size = to_i32(&format!("{FUNCTION}: world_size"), world_size)?;
        let name = collectives.name().map(|name| {
            CString::new(name)
                .map_err(|_| Error::invalid_argument(format!("{FUNCTION}: the name {name:?} contains a NUL byte")))
        });
        let name = name.transpose()?;
        let user_data = Box::into_raw(Box::new(State { collectives: Mutex::new(collectives), world_size }));
        let callbacks = sys::fp8rl_collective_callbacks {
            struct_size: std::mem::size_of::<sys::fp8rl_collective_callbacks>() as u32,
            rank: c_rank,
            world_size: c_world_size,
            all_reduce_sum: Some(all_reduce_sum::<T>),
            reduce_scatter_sum: if T::HAS_REDUCE_SCATTER_SUM { Some(reduce_scatter_sum::<T>) } else { None },
            all_gather: Some(all_gather::<T>),
            broadcast: Some(broadcast::<T>),
            barrier: if T::HAS_BARRIER { Some(barrier::<T>) } else { None },
            error_message: Some(error_message),
            destroy: Some(destroy::<T>),
            name: name.as_ref().map_or(std::ptr::null(), |name| name.as_ptr()),
            user_data: user_data.cast(),
        };
        let mut raw = std::ptr::null_mut();
        // SAFETY: valid callbacks (the name is copied during the call) and out-pointer.
        let created = check(unsafe { sys::fp8rl_communicator_create_from_callbacks(&callbacks, &mut raw) });
        if let Err(error) = created {
            // No communicator took the state, so destroy will never free it.
            // SAFETY: the Box leaked above, not shared with C after the failure.
            drop(unsafe { Box::from_raw(user_data) });
            return Err(error);
        }
        Ok(Self::from_raw(raw))
    }
}

/// The callbacks' `user_data`: the implementation, and what the trampolines
/// need to read the C arguments.
struct State<T> {
    collectives: Mutex<T>,
    world_size: usize,
}

thread_local! {
    /// The message of the last collective that failed on this thread, for
    /// `error_message`, which the library calls right after the failure on
    /// the same thread (and copies the text at once).
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Runs one collective on the implementation behind `user_data`: 0 for
/// success, 1 for an `Err`, 2 for a panic, with the message kept for `error_message`.
///
/// # Safety
/// `user_data` must be the `State<T>` a communicator of `T` was created with.
unsafe fn run<T: HostCollectives>(
    user_data: *mut c_void,
    collective: impl FnOnce(&mut T, usize) -> CollectiveResult,
) -> c_int {
    // SAFETY: the caller's promise; the library frees the state only through
    // `destroy`, after the last collective.
    let state = unsafe { &*user_data.cast::<State<T>>() };
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut collectives =
            state.collectives.lock().map_err(|_| "an earlier collective on this communicator panicked")?;
        collective(&mut collectives, state.world_size)
    }));
    let (code, message) = match outcome {
        Ok(Ok(())) => return 0,
        Ok(Err(error)) => (1, error.to_string()),
        Err(panic) => (2, format!("panicked: {}", panic_message(panic.as_ref()))),
    };
    let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|last| *last.borrow_mut() = message);
    code
}

/// The text a panic was raised with, when it is a string.
fn panic_message(panic: &(dyn Any + Send)) -> &str {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(text), _) => text,
        (_, Some(text)) => text,
        _ => "(a non-string payload)",
    }
}

/// A C element type's size in bytes.
fn element_size(element_type: sys::fp8rl_element_type) -> std::result::Result<usize, String> {
    match element_type {
        sys::FP8RL_ELEMENT_F32 => Ok(4),
        sys::FP8RL_ELEMENT_F64 | sys::FP8RL_ELEMENT_I64 => Ok(8),
        sys::FP8RL_ELEMENT_U8 => Ok(1),
        other => Err(format!("unknown element type {other}")),
    }
}

/// `count` elements at `data` as a mutable slice (empty for no elements,
/// whatever the pointer).
///
/// # Safety
/// `data` must point to `count` valid, aligned, unaliased elements that
/// outlive `'a`.
unsafe fn slice<'a, E>(data: *mut c_void, count: usize) -> &'a mut [E] {
    if count == 0 {
        return &mut [];
    }
    // SAFETY: the caller's promise.
    unsafe { std::slice::from_raw_parts_mut(data.cast::<E>(), count) }
}

/// The C buffer of a sum, typed.
///
/// # Safety
/// As [`slice`], for `count` elements of `element_type`.
unsafe fn sum_buffer<'a>(
    data: *mut c_void,
    count: usize,
    element_type: sys::fp8rl_element_type,
) -> std::result::Result<SumBuffer<'a>, String> {
    // SAFETY (each arm): the caller's promise, for the element type C named.
    Ok(match element_type {
        sys::FP8RL_ELEMENT_F32 => SumBuffer::F32(unsafe { slice(data, count) }),
        sys::FP8RL_ELEMENT_F64 => SumBuffer::F64(unsafe { slice(data, count) }),
        sys::FP8RL_ELEMENT_I64 => SumBuffer::I64(unsafe { slice(data, count) }),
        other => return Err(format!("element type {other} cannot be summed")),
    })
}

/// A C count as a usize (the library never passes a negative one).
fn to_count(count: i64) -> std::result::Result<usize, String> {
    usize::try_from(count).map_err(|_| format!("negative count {count}"))
}

/// The C `counts[world_size]` as usizes.
///
/// # Safety
/// `counts` must point to `world_size` valid values.
unsafe fn parts(counts: *const i64, world_size: usize) -> std::result::Result<Vec<usize>, String> {
    // SAFETY: the caller's promise; world_size >= 1, so the pointer is not dangling.
    let counts = unsafe { std::slice::from_raw_parts(counts, world_size) };
    counts.iter().map(|&count| to_count(count)).collect()
}

// The trampolines. SAFETY (all): the library calls them with the arguments
// the header describes for fp8rl_collective_callbacks: user_data is the
// State<T> of `from_collectives`, data holds the elements the counts say.

unsafe extern "C" fn all_reduce_sum<T: HostCollectives>(
    data: *mut c_void,
    count: i64,
    element_type: sys::fp8rl_element_type,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: see above.
    unsafe {
        run::<T>(user_data, |collectives, _| {
            let data = sum_buffer(data, to_count(count)?, element_type)?;
            collectives.all_reduce_sum(data)
        })
    }
}

unsafe extern "C" fn reduce_scatter_sum<T: HostCollectives>(
    data: *mut c_void,
    counts: *const i64,
    element_type: sys::fp8rl_element_type,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: see above.
    unsafe {
        run::<T>(user_data, |collectives, world_size| {
            let counts = parts(counts, world_size)?;
            let data = sum_buffer(data, counts.iter().sum(), element_type)?;
            collectives.reduce_scatter_sum(data, &counts)
        })
    }
}

unsafe extern "C" fn all_gather<T: HostCollectives>(
    data: *mut c_void,
    counts: *const i64,
    element_type: sys::fp8rl_element_type,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: see above.
    unsafe {
        run::<T>(user_data, |collectives, world_size| {
            let size = element_size(element_type)?;
            let bytes: Vec<usize> = parts(counts, world_size)?.iter().map(|count| count * size).collect();
            collectives.all_gather(slice(data, bytes.iter().sum()), &bytes)
        })
    }
}

unsafe extern "C" fn broadcast<T: HostCollectives>(
    data: *mut c_void,
    count: i64,
    element_type: sys::fp8rl_element_type,
    root: i32,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: see above.
    unsafe {
        run::<T>(user_data, |collectives, _| {
            let bytes = to_count(count)? * element_size(element_type)?;
            let root = usize::try_from(root).map_err(|_| format!("negative root {root}"))?;
            collectives.broadcast(slice(data, bytes), root)
        })
    }
}

unsafe extern "C" fn barrier<T: HostCollectives>(user_data: *mut c_void) -> c_int {
    // SAFETY: see above.
    unsafe { run::<T>(user_data, |collectives, _| collectives.barrier()) }
}

/// Why the last collective on this thread failed; valid until the next one fails.
unsafe extern "C" fn error_message(_user_data: *mut c_void) -> *const c_char {
    LAST_ERROR.with(|last| last.borrow().as_ptr())
}

unsafe extern "C" fn destroy<T: HostCollectives>(user_data: *mut c_void) {
    // SAFETY: see above; the library calls destroy once, after the last collective.
    let state = unsafe { Box::from_raw(user_data.cast::<State<T>>()) };
    // A panicking Drop must not unwind into C either; the state is gone regardless.
    let _ = catch_unwind(AssertUnwindSafe(move || drop(state)));
}
