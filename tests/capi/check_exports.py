"""A shared library exports exactly the functions its public header declares.

Usage: check_exports.py <library> <header> [--min-declared N]
       (libfp8rl.so with fp8rl.h; libfp8rl_mpi.so with fp8rl_mpi.h, --min-declared 1)
Reads the dynamic symbol table with `nm -D --defined-only` and the SONAME with
`objdump -p`; fails listing every stray or missing symbol. The SONAME must be
the library's own name with the major version (libfp8rl_mpi.so.0). Fewer than
N declarations parsed (default 10) means the parser is broken.
"""
import argparse
import os
import re
import subprocess
import sys


def exported_symbols(library):
    out = subprocess.run(["nm", "-D", "--defined-only", library], check=True, capture_output=True, text=True).stdout
    symbols = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] not in ("A",):  # absolute symbols are version-script markers
            symbols.add(parts[2].split("@")[0])
    return symbols


def declared_functions(header):
    text = open(header, encoding="utf-8").read()
    return set(re.findall(r"FP8RL_(?:MPI_)?API\s+[\w\s\*]+?\b(fp8rl_\w+)\s*\(", text))


def soname(library):
    out = subprocess.run(["objdump", "-p", library], check=True, capture_output=True, text=True).stdout
    match = re.search(r"SONAME\s+(\S+)", out)
    return match.group(1) if match else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("library")
    parser.add_argument("header")
    parser.add_argument("--min-declared", type=int, default=10)
    args = parser.parse_args()
    library, header = args.library, args.header
    header_name, library_name = os.path.basename(header), os.path.basename(library).split(".so")[0]
    exported, declared = exported_symbols(library), declared_functions(header)
    failures = []
    stray = sorted(s for s in exported if not s.startswith("fp8rl_"))
    if stray:
        failures.append("exported symbols outside the fp8rl_ namespace: " + ", ".join(stray))
    undeclared = sorted(s for s in exported if s.startswith("fp8rl_") and s not in declared)
    if undeclared:
        failures.append(f"exported but not declared in {header_name}: " + ", ".join(undeclared))
    missing = sorted(declared - exported)
    if missing:
        failures.append(f"declared in {header_name} but not exported: " + ", ".join(missing))
    name = soname(library)
    if not name or not re.fullmatch(re.escape(library_name) + r"\.so\.\d+", name):
        failures.append(f"SONAME is {name!r}, expected {library_name}.so.<major>")
    if len(declared) < args.min_declared:
        failures.append(f"only {len(declared)} declarations parsed from the header: the parser is broken")
    for failure in failures:
        print("FAIL:", failure)
    print(f"{len(declared)} declared, {len(exported)} exported, SONAME {name}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
