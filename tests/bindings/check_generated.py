#!/usr/bin/env python3
"""Fails if the committed generated files differ from what the header gives now.

Usage: check_generated.py [--swig SWIG]. Exits 77 (skipped) when swig is missing.
"""
import argparse
import difflib
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GENERATOR = os.path.join(ROOT, "bindings", "gen", "generate.py")
sys.path.insert(0, os.path.dirname(GENERATOR))
from generate import OUTPUTS  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--swig", default="swig")
    args = parser.parse_args()
    swig = shutil.which(args.swig)
    if swig is None:
        print(f"SKIP: {args.swig} not found; cannot regenerate the bindings")
        return 77

    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, GENERATOR, "--swig", swig, "--out", out], check=True)
        stale = []
        for path in OUTPUTS:
            with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                committed = f.read().splitlines(keepends=True)
            with open(os.path.join(out, path), encoding="utf-8") as f:
                fresh = f.read().splitlines(keepends=True)
            if committed != fresh:
                stale.append(path)
                sys.stdout.writelines(difflib.unified_diff(committed, fresh, "committed/" + path, "generated/" + path))
    if stale:
        print(f"\nFAIL: {', '.join(stale)} out of date with the header; run: python3 bindings/gen/generate.py")
        return 1
    print(f"OK: {len(OUTPUTS)} generated files match the header")
    return 0


if __name__ == "__main__":
    sys.exit(main())
