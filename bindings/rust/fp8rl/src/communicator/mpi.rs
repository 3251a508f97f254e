//! MPI communicators, through the companion library libfp8rl_mpi, which is
//! loaded at run time: libfp8rl itself has no MPI dependency, and neither has
//! this crate (a program links MPI through its own MPI crate, e.g. rsmpi).

#[cfg(unix)]
use std::path::PathBuf;

use fp8rl_sys as sys;

use super::Communicator;
use crate::error::{check, Error, Result, Status};

/// The environment variable that names libfp8rl_mpi where it is not beside libfp8rl.
const LIBRARY_VARIABLE: &str = "FP8RL_MPI_LIBRARY";

/// `fp8rl_status fp8rl_mpi_communicator_create(int64_t fortran_comm, fp8rl_communicator** out)`
/// (fp8rl/fp8rl_mpi.h).
type CreateFn = unsafe extern "C" fn(i64, *mut *mut sys::fp8rl_communicator) -> sys::fp8rl_status;

impl Communicator {
    /// A communicator over an MPI communicator the program already has
    /// (`fp8rl_mpi_communicator_create` of libfp8rl_mpi): pass its Fortran
    /// handle, `MPI_Comm_c2f(comm)`, which every MPI binding can produce
    /// (with rsmpi: `mpi::ffi::RSMPI_Comm_c2f(world.as_raw())`). The library
    /// keeps its own duplicate of the communicator; MPI must stay initialized
    /// while contexts use it.
    ///
    /// libfp8rl_mpi is loaded from the path in `FP8RL_MPI_LIBRARY`, else from
    /// the folder libfp8rl was loaded from, and stays loaded. It must be built
    /// against the same MPI as the program. When it cannot be loaded, this
    /// fails with [`Status::BackendUnavailable`] and a message naming the path.
    pub fn from_mpi_fortran_handle(handle: i64) -> Result<Self> {
        let create = load_create_function()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: the function the header declares, with a valid out-pointer;
        // it reports failures through fp8rl's per-thread error message.
        check(unsafe { create(handle, &mut raw) })?;
        Ok(Self::from_raw(raw))
    }
}

/// An error of `from_mpi_fortran_handle` itself: the library is not usable.
#[cfg(unix)]
fn unavailable(message: String) -> Error {
    Error::new(Status::BackendUnavailable, format!("Communicator::from_mpi_fortran_handle: {message}"))
}

/// Where libfp8rl_mpi is: `FP8RL_MPI_LIBRARY`, else beside libfp8rl.
#[cfg(unix)]
fn library_path() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os(LIBRARY_VARIABLE) {
        return Ok(PathBuf::from(path));
    }
    let file_name = format!("{}fp8rl_mpi{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    Ok(dl::folder_of_libfp8rl().map_err(unavailable)?.join(file_name))
}

#[cfg(unix)]
fn load_create_function() -> Result<CreateFn> {
    let path = library_path()?;
    let symbol = dl::open_symbol(&path, c"fp8rl_mpi_communicator_create").map_err(|why| {
        unavailable(format!(
            "cannot use {}: {why} (build fp8rl with MPI, or set {LIBRARY_VARIABLE} to libfp8rl_mpi's path)",
            path.display()
        ))
    })?;
    // SAFETY: the symbol is the function fp8rl_mpi.h declares, of this type.
    Ok(unsafe { std::mem::transmute::<*mut std::ffi::c_void, CreateFn>(symbol) })
}

#[cfg(not(unix))]
fn load_create_function() -> Result<CreateFn> {
    Err(Error::new(Status::Unsupported, "Communicator::from_mpi_fortran_handle: only on Unix-like systems"))
}

/// The dynamic loader (libc's dlopen family), declared here: no crates beyond the workspace.
#[cfg(unix)]
mod dl {
    use std::ffi::{c_char, c_int, c_void, CStr, CString};
    use std::path::{Path, PathBuf};

    #[cfg(target_os = "macos")]
    const RTLD_NOW: c_int = 0x2;
    #[cfg(target_os = "macos")]
    const RTLD_GLOBAL: c_int = 0x8;
    #[cfg(not(target_os = "macos"))]
    const RTLD_NOW: c_int = 0x2;
    #[cfg(not(target_os = "macos"))]
    const RTLD_GLOBAL: c_int = 0x100;

    /// `Dl_info`, as glibc, musl and the BSDs (macOS included) lay it out.
    #[repr(C)]
    struct DlInfo {
        dli_fname: *const c_char,
        dli_fbase: *mut c_void,
        dli_sname: *const c_char,
        dli_saddr: *mut c_void,
    }

    extern "C" {
        fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
        fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
        fn dlclose(handle: *mut c_void) -> c_int;
        fn dlerror() -> *mut c_char;
        fn dladdr(address: *const c_void, info: *mut DlInfo) -> c_int;
    }

    /// The loader's message for the last failure on this thread.
    fn last_error() -> String {
        // SAFETY: NULL or a NUL-terminated string valid until the next dl call on this thread.
        let text = unsafe { dlerror() };
        if text.is_null() {
            "unknown dynamic loader error".into()
        } else {
            // SAFETY: see above; copied at once.
            unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
        }
    }

    /// Loads `path` for good (the communicators it makes run its code) and
    /// returns its `symbol`. RTLD_GLOBAL: MPI implementations load plugins
    /// that expect libmpi's symbols to be global, as mpi4py loads it.
    pub(super) fn open_symbol(path: &Path, symbol: &CStr) -> Result<*mut c_void, String> {
        let c_path = CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()))
            .map_err(|_| "the path contains a NUL byte".to_string())?;
        // SAFETY: a NUL-terminated path; the handle is never closed on success.
        let handle = unsafe { dlopen(c_path.as_ptr(), RTLD_NOW | RTLD_GLOBAL) };
        if handle.is_null() {
            return Err(last_error());
        }
        // SAFETY: a handle dlopen returned and a NUL-terminated name.
        let address = unsafe { dlsym(handle, symbol.as_ptr()) };
        if address.is_null() {
            let why = last_error();
            // SAFETY: the handle dlopen returned, not used again.
            unsafe { dlclose(handle) };
            return Err(why);
        }
        Ok(address)
    }

    /// The folder of the libfp8rl this process loaded.
    pub(super) fn folder_of_libfp8rl() -> Result<PathBuf, String> {
        let mut info = DlInfo {
            dli_fname: std::ptr::null(),
            dli_fbase: std::ptr::null_mut(),
            dli_sname: std::ptr::null(),
            dli_saddr: std::ptr::null_mut(),
        };
        let function = fp8rl_sys::fp8rl_version as unsafe extern "C" fn() -> u32;
        // SAFETY: an address inside libfp8rl and a valid Dl_info to fill.
        let found = unsafe { dladdr(function as *const c_void, &mut info) };
        if found == 0 || info.dli_fname.is_null() {
            return Err("cannot tell which file libfp8rl was loaded from".into());
        }
        // SAFETY: a NUL-terminated path owned by the loader, copied at once.
        let file = unsafe { CStr::from_ptr(info.dli_fname) };
        let file = Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(file.to_bytes()));
        Ok(file.parent().map(Path::to_path_buf).unwrap_or_default())
    }
}
