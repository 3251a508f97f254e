//! Contexts: a backend (device, threads, memory) plus logging.

use std::ffi::{c_char, c_void, CStr};
use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

use fp8rl_sys as sys;

use crate::communicator::Communicator;
use crate::enums::{Backend, LogLevel};
use crate::error::{check, Result};

/// What a log callback is: called from any thread that calls into the context.
type LogFn = dyn Fn(LogLevel, &str) + Send + Sync;

/// The boxed closure a context logs to. Boxed twice over: the C side gets a
/// thin pointer to this struct as its `user_data`.
struct LogSink(Box<LogFn>);

/// Where the library's log messages go; `user_data` is the context's `LogSink`.
unsafe extern "C" fn log_to_closure(level: sys::fp8rl_log_level, message: *const c_char, user_data: *mut c_void) {
    // SAFETY: user_data is the LogSink the context owns, alive while the
    // context is (it is freed after fp8rl_context_destroy returns).
    let sink = unsafe { &*(user_data as *const LogSink) };
    let message = if message.is_null() {
        "".into()
    } else {
        // SAFETY: a NUL-terminated string, valid during this call.
        unsafe { CStr::from_ptr(message) }.to_string_lossy()
    };
    // A panic must not unwind into C (that would abort the process): it is
    // caught here and dropped, like a message nobody listens to.
    let _ = catch_unwind(AssertUnwindSafe(|| (sink.0)(LogLevel::from_raw(level), &message)));
}

/// A backend (device, threads, memory) plus logging (`fp8rl_context`).
///
/// Policies borrow their context, so it cannot be dropped while any is alive
/// (the C library would refuse). Every call on a context and its policies is
/// serialized by the library, so one context may be shared by threads. Built
/// with a [`Communicator`], its trainers are data-parallel over those ranks.
///
/// ```no_run
/// use fp8rl::{Backend, Context, LogLevel};
/// let context = Context::builder()
///     .backend(Backend::Cpu)
///     .num_threads(2)
///     .log_level(LogLevel::Info)
///     .log_callback(|level, message| eprintln!("[{level:?}] {message}"))
///     .build()?;
/// println!("running on {}", context.description()?);
/// # Ok::<(), fp8rl::Error>(())
/// ```
pub struct Context {
    raw: NonNull<sys::fp8rl_context>,
    // Must outlive `raw`: the library may log until fp8rl_context_destroy returns.
    log_sink: Option<Box<LogSink>>,
}

// SAFETY: the header documents every context function except
// fp8rl_context_destroy as thread-safe ("calls on one context are
// serialized"); destroy only runs from `Drop`/`close`, which own the context,
// and policies borrow it, so no other call can be in flight then. The log
// closure is called on whichever thread made the call, hence it must be
// `Send + Sync`, which `ContextBuilder::log_callback` requires; so are a
// communicator's host collectives, which are `Send` and called under a mutex.
unsafe impl Send for Context {}
// SAFETY: see `Send`: shared references only reach the thread-safe functions.
unsafe impl Sync for Context {}

impl Context {
    /// Options for a new context, starting from the library's defaults.
    pub fn builder<'c>() -> ContextBuilder<'c> {
        ContextBuilder::new()
    }

    /// A context on `backend` with default options (all hardware threads, no logging).
    pub fn new(backend: Backend) -> Result<Self> {
        Self::builder().backend(backend).build()
    }

    /// The backend the context actually runs on (never [`Backend::Auto`]).
    pub fn backend(&self) -> Result<Backend> {
        let mut backend = 0;
        // SAFETY: a valid context and out-pointer.
        check(unsafe { sys::fp8rl_context_get_backend(self.raw.as_ptr(), &mut backend) })?;
        Ok(Backend::from_raw(backend))
    }

    /// The number of CPU worker threads (>= 1).
    pub fn num_threads(&self) -> Result<usize> {
        let mut threads = 0;
        // SAFETY: a valid context and out-pointer.
        check(unsafe { sys::fp8rl_context_get_num_threads(self.raw.as_ptr(), &mut threads) })?;
        Ok(usize::try_from(threads).unwrap_or(0))
    }

    /// A human-readable description of the device, e.g. `"CPU (AVX-512, 2 threads)"`.
    pub fn description(&self) -> Result<String> {
        let mut description: *const c_char = std::ptr::null();
        // SAFETY: a valid context and out-pointer; the string lives as long as the context.
        check(unsafe { sys::fp8rl_context_get_description(self.raw.as_ptr(), &mut description) })?;
        // SAFETY: on success a NUL-terminated string owned by the context.
        Ok(unsafe { CStr::from_ptr(description) }.to_string_lossy().into_owned())
    }

    /// This process's rank in the context's communicator (0 without one).
    pub fn rank(&self) -> Result<usize> {
        let mut rank = 0;
        // SAFETY: a valid context and out-pointer.
        check(unsafe { sys::fp8rl_context_get_rank(self.raw.as_ptr(), &mut rank) })?;
        Ok(usize::try_from(rank).unwrap_or(0))
    }

    /// The number of ranks in the context's communicator (1 without one).
    pub fn world_size(&self) -> Result<usize> {
        let mut world_size = 0;
        // SAFETY: a valid context and out-pointer.
        check(unsafe { sys::fp8rl_context_get_world_size(self.raw.as_ptr(), &mut world_size) })?;
        Ok(usize::try_from(world_size).unwrap_or(0))
    }

    /// Destroys the context and reports the library's status (dropping it
    /// does the same and ignores the status).
    pub fn close(self) -> Result<()> {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: we own the context; ManuallyDrop keeps Drop from destroying it again.
        let status = unsafe { sys::fp8rl_context_destroy(this.raw.as_ptr()) };
        let log_sink = this.log_sink.take();
        if status == sys::FP8RL_OK {
            drop(log_sink);
        } else {
            // The context lives on (it cannot, with policies borrowing it, but
            // if it did its log callback would need the sink): leak both.
            std::mem::forget(log_sink);
        }
        check(status)
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::fp8rl_context {
        self.raw.as_ptr()
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: we own the context; no policy borrows it any more.
        let status = unsafe { sys::fp8rl_context_destroy(self.raw.as_ptr()) };
        if status != sys::FP8RL_OK {
            // See `close`: a context that survives keeps its log sink.
            std::mem::forget(self.log_sink.take());
        }
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context").field("raw", &self.raw).field("logging", &self.log_sink.is_some()).finish()
    }
}

/// Options of a new [`Context`] (`fp8rl_context_options`), from [`Context::builder`].
///
/// `'c` is the borrow of the [`Communicator`] given to
/// [`communicator`](Self::communicator), which must live until
/// [`build`](Self::build) (the context then keeps its own reference).
pub struct ContextBuilder<'c> {
    options: sys::fp8rl_context_options,
    log_sink: Option<Box<LogSink>>,
    communicator: PhantomData<&'c Communicator>,
}

impl<'c> ContextBuilder<'c> {
    /// The library's defaults: [`Backend::Auto`], all hardware threads, CUDA
    /// device 0, [`LogLevel::Warning`], no log callback, no communicator.
    pub fn new() -> Self {
        // SAFETY: plain C data (see c_defaults).
        let options = unsafe { crate::macros::c_defaults(sys::fp8rl_context_options_init) };
        Self { options, log_sink: None, communicator: PhantomData }
    }

    /// Where computations run.
    #[must_use]
    pub fn backend(mut self, backend: Backend) -> Self {
        self.options.backend = backend.as_raw();
        self
    }

    /// CPU worker threads; 0 (default) = all hardware threads.
    #[must_use]
    pub fn num_threads(mut self, threads: i32) -> Self {
        self.options.num_threads = threads;
        self
    }

    /// CUDA device ordinal; default 0.
    #[must_use]
    pub fn cuda_device(mut self, device: i32) -> Self {
        self.options.cuda_device = device;
        self
    }

    /// Messages below this level are dropped; default [`LogLevel::Warning`].
    #[must_use]
    pub fn log_level(mut self, level: LogLevel) -> Self {
        self.options.log_level = level.as_raw();
        self
    }

    /// Receives the library's log messages; the context keeps the closure
    /// alive. It is called on the thread that made the fp8rl call (so it must
    /// be `Send + Sync`) and must not call back into the same context. A panic
    /// inside it is caught and discarded: it cannot unwind through C.
    #[must_use]
    pub fn log_callback(mut self, callback: impl Fn(LogLevel, &str) + Send + Sync + 'static) -> Self {
        self.log_sink = Some(Box::new(LogSink(Box::new(callback))));
        self
    }

    /// The ranks this process trains with: the context's trainers become
    /// data-parallel (see [`Communicator`]). The context keeps its own
    /// reference, so `communicator` may be dropped once the context is built.
    /// An NCCL communicator needs [`Backend::Cuda`] on its device.
    ///
    /// The communicator must outlive the builder:
    ///
    /// ```compile_fail
    /// # fn f(communicator: fp8rl::Communicator) -> fp8rl::Result<()> {
    /// let builder = fp8rl::Context::builder().communicator(&communicator);
    /// drop(communicator); // error: `communicator` is borrowed by `builder`
    /// let context = builder.build()?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn communicator(mut self, communicator: &'c Communicator) -> Self {
        self.options.communicator = communicator.as_ptr();
        self
    }

    /// Creates the context.
    ///
    /// Fails with [`Status::BackendUnavailable`](crate::Status::BackendUnavailable)
    /// if CUDA was asked for and is not built or has no device, and with
    /// [`Status::InvalidArgument`](crate::Status::InvalidArgument) for
    /// out-of-range options (the message names the field).
    pub fn build(self) -> Result<Context> {
        let mut options = self.options;
        if let Some(sink) = &self.log_sink {
            options.log_callback = Some(log_to_closure);
            options.log_user_data = &**sink as *const LogSink as *mut c_void;
        }
        let mut raw = std::ptr::null_mut();
        // SAFETY: valid options and out-pointer (the communicator, if any, is
        // borrowed for 'c); the sink (if any) moves into the context below
        // without moving its heap allocation.
        check(unsafe { sys::fp8rl_context_create(&options, &mut raw) })?;
        let raw = NonNull::new(raw).expect("fp8rl_context_create succeeded without a context");
        Ok(Context { raw, log_sink: self.log_sink })
    }
}

impl Default for ContextBuilder<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ContextBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextBuilder")
            .field("backend", &Backend::from_raw(self.options.backend))
            .field("num_threads", &self.options.num_threads)
            .field("cuda_device", &self.options.cuda_device)
            .field("log_level", &LogLevel::from_raw(self.options.log_level))
            .field("log_callback", &self.log_sink.is_some())
            .field("communicator", &!self.options.communicator.is_null())
            .finish()
    }
}
