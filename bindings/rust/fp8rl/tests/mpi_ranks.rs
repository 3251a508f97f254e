//! The MPI communicator end to end, run by every rank of an MPI job
//! (tests/rust/CMakeLists.txt: `cargo test --test mpi_ranks` under mpirun,
//! with `FP8RL_TEST_MPI_WORLD` naming the helper library of
//! tests/rust/mpi_world.c, which initializes MPI and gives the world's
//! Fortran handle). Without that variable the test returns at once.
//!
//! Every rank trains the example's GRPO iterations through libfp8rl_mpi on
//! its own prompts; the ranks' fingerprints, all-gathered through MPI
//! itself, must be equal after every iteration.

#[path = "../examples/data_parallel.rs"]
#[allow(dead_code)] // its main() is for `cargo run --example`
mod data_parallel;

use std::ffi::{c_char, c_int, c_void, CString};

use fp8rl::Communicator;

extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

type InitFn = unsafe extern "C" fn(*mut i32, *mut i32) -> i64;
type AllgatherFn = unsafe extern "C" fn(u64, *mut u64);
type FinalizeFn = unsafe extern "C" fn();

/// The functions of tests/rust/mpi_world.c.
struct MpiWorld {
    init: InitFn,
    allgather_u64: AllgatherFn,
    finalize: FinalizeFn,
}

impl MpiWorld {
    fn load(path: &std::ffi::OsStr) -> Self {
        let path = CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path)).unwrap();
        const RTLD_NOW: c_int = 2;
        // SAFETY: a NUL-terminated path; the library stays loaded.
        let library = unsafe { dlopen(path.as_ptr(), RTLD_NOW) };
        assert!(!library.is_null(), "cannot load {path:?}");
        let symbol = |name: &str| {
            let name = CString::new(name).unwrap();
            // SAFETY: a valid handle and NUL-terminated name.
            let address = unsafe { dlsym(library, name.as_ptr()) };
            assert!(!address.is_null(), "{path:?} lacks {name:?}");
            address
        };
        // SAFETY: the functions mpi_world.c defines, with these signatures.
        unsafe {
            Self {
                init: std::mem::transmute::<*mut c_void, InitFn>(symbol("fp8rl_test_mpi_init")),
                allgather_u64: std::mem::transmute::<*mut c_void, AllgatherFn>(symbol("fp8rl_test_mpi_allgather_u64")),
                finalize: std::mem::transmute::<*mut c_void, FinalizeFn>(symbol("fp8rl_test_mpi_finalize")),
            }
        }
    }
}

#[test]
fn the_ranks_of_an_mpi_job_train_in_lockstep() {
    let Some(path) = std::env::var_os("FP8RL_TEST_MPI_WORLD") else {
        eprintln!("note: FP8RL_TEST_MPI_WORLD is not set: not an MPI job, nothing to test");
        return;
    };
    let world = MpiWorld::load(&path);
    let (mut rank, mut size) = (0, 0);
    // SAFETY: MPI_Init once, with valid out-pointers.
    let handle = unsafe { (world.init)(&mut rank, &mut size) };
    let (rank, size) = (rank as usize, size as usize);

    let communicator = Communicator::from_mpi_fortran_handle(handle).expect("an MPI communicator");
    assert_eq!((communicator.rank().unwrap(), communicator.world_size().unwrap()), (rank, size));
    let outcome = data_parallel::train_rank(&communicator, 2).expect("the rank trains");
    drop(communicator); // and train_rank's context is gone: nothing uses MPI after MPI_Finalize
    assert_eq!((outcome.rank, outcome.world_size), (rank, size));
    for (iteration, &fingerprint) in outcome.fingerprints.iter().enumerate() {
        let mut all = vec![0u64; size];
        // SAFETY: MPI is initialized; `all` holds one value per rank.
        unsafe { (world.allgather_u64)(fingerprint, all.as_mut_ptr()) };
        assert!(all.iter().all(|&other| other == fingerprint), "fingerprints after iteration {iteration}: {all:x?}");
    }
    for metrics in &outcome.iterations {
        assert_eq!(metrics.total.token_mult_prob_error, 1.0);
        assert_eq!(metrics.total.sequences, (size * data_parallel::PROMPTS_PER_RANK * data_parallel::GROUP) as i64);
    }
    // SAFETY: every communicator and context is gone.
    unsafe { (world.finalize)() };
}
