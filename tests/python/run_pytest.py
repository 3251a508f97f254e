#!/usr/bin/env python3
"""Runs one pytest file; exits 77 (ctest: skipped) when pytest is not installed (`./run` installs it)."""
import sys

try:
    import pytest
except ImportError:
    print("pytest is not installed: skipped")
    sys.exit(77)

sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-W", "error::pytest.PytestUnraisableExceptionWarning",
                      *sys.argv[1:]]))
