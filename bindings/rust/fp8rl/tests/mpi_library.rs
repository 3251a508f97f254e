//! Loading libfp8rl_mpi: where it is looked for, and the errors when it
//! cannot be used. One test in its own program, because it sets the
//! environment variable that names the library (no other thread may read the
//! environment meanwhile).

mod common;

use std::path::{Path, PathBuf};

use common::expect_error;
use fp8rl::{Communicator, Status};

const VARIABLE: &str = "FP8RL_MPI_LIBRARY";

/// The file libfp8rl was loaded from, as the loader's own table says.
#[cfg(target_os = "linux")]
fn loaded_libfp8rl() -> PathBuf {
    fp8rl::version(); // make sure the library is mapped
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let line = maps.lines().find(|line| line.contains("/libfp8rl.so")).expect("libfp8rl is mapped");
    PathBuf::from(&line[line.find('/').unwrap()..])
}

#[test]
fn a_library_that_cannot_be_used_is_an_error_naming_it() {
    // Named by the variable, but missing.
    let missing = std::env::temp_dir().join("fp8rl-no-such-folder").join("libfp8rl_mpi.so");
    std::env::set_var(VARIABLE, &missing);
    let error =
        expect_error(Communicator::from_mpi_fortran_handle(0), Status::BackendUnavailable, &missing.to_string_lossy());
    assert!(error.message.starts_with("Communicator::from_mpi_fortran_handle: cannot use "), "{error}");
    assert!(error.message.contains(VARIABLE), "{error}");

    #[cfg(target_os = "linux")]
    {
        // A library that loads but lacks the function: libfp8rl itself.
        let libfp8rl = loaded_libfp8rl();
        std::env::set_var(VARIABLE, &libfp8rl);
        let result = Communicator::from_mpi_fortran_handle(0);
        expect_error(result, Status::BackendUnavailable, "fp8rl_mpi_communicator_create");

        // Without the variable: beside libfp8rl (skipped where this build has it:
        // calling it would need MPI initialized).
        std::env::remove_var(VARIABLE);
        let beside: PathBuf = libfp8rl.parent().unwrap_or(Path::new("")).join("libfp8rl_mpi.so");
        if beside.exists() {
            eprintln!("note: {} exists; the default path was not checked", beside.display());
        } else {
            let result = Communicator::from_mpi_fortran_handle(0);
            expect_error(result, Status::BackendUnavailable, &beside.to_string_lossy());
        }
    }
}
