#!/usr/bin/env python3
"""Runs a Python script in this process where mpi4py can be imported; else exits 77 (ctest: skipped).

Usage (one rank of an MPI job): if_mpi4py.py <script.py> [arguments...]
./run installs mpi4py; another Python may lack it, and the MPI tests of the
binding then report themselves skipped rather than failed.
"""
import runpy
import sys

try:
    import mpi4py  # noqa: F401
except ImportError:
    print(f"mpi4py is not installed for {sys.executable}: skipped")
    sys.exit(77)

sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
