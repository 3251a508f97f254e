#!/usr/bin/env python3
"""Generates the language bindings of fp8rl from its one public header.

    python3 bindings/gen/generate.py            # rewrite the committed files
    python3 bindings/gen/generate.py --out DIR  # write them under DIR instead (tests diff those)

The header is parsed once into a neutral model (model.py); each emitter turns
that model into one file. Add a language by adding an emitter to OUTPUTS.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import emit_julia  # noqa: E402
import emit_layout_probe  # noqa: E402
import emit_python  # noqa: E402
import emit_rust  # noqa: E402
import model  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = "capi/include/fp8rl/fp8rl.h"

# Output path (relative to the repository root) -> emitter.
OUTPUTS = {
    "bindings/python/fp8rl/_raw.py": emit_python.emit,
    "tests/bindings/layout_probe.c": emit_layout_probe.emit,
    "bindings/rust/fp8rl-sys/src/bindings.rs": emit_rust.emit,
    "bindings/julia/FP8RL/src/LibFP8RL.jl": emit_julia.emit,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--swig", default="swig", help="the swig executable (4.x)")
    parser.add_argument("--header", default=os.path.join(ROOT, HEADER))
    parser.add_argument("--out", default=ROOT, help="root under which the outputs are written")
    args = parser.parse_args()

    api = model.read_header(args.header, args.swig)
    if api.unmapped:
        # Fail rather than silently drop part of the API from every binding.
        sys.exit("generate.py: cannot map: " + "; ".join(api.unmapped))
    for path, emit in OUTPUTS.items():
        target = os.path.join(args.out, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8", newline="\n") as f:
            f.write(emit(api, HEADER))
    return 0


if __name__ == "__main__":
    sys.exit(main())
