#!/usr/bin/env python3
"""Compares the ctypes declarations of fp8rl._raw with what the C compiler reports.

Usage: check_layout.py LAYOUT_PROBE PYTHON_PACKAGE_DIR
The probe (generated from the same header model) prints struct sizes, field
offsets and sizes, enum sizes and the values of enumerators and constants.
"""
import ctypes
import subprocess
import sys


def main(probe, package_dir):
    sys.path.insert(0, package_dir)
    from fp8rl import _raw

    lines = subprocess.run([probe], check=True, capture_output=True, text=True).stdout.splitlines()
    errors, seen_structs, seen_fields = [], set(), set()
    for line in lines:
        kind, name, *numbers = line.split()
        numbers = [int(n) for n in numbers]
        if kind == "size":
            seen_structs.add(name)
            got = ctypes.sizeof(getattr(_raw, name))
            if got != numbers[0]:
                errors.append(f"sizeof({name}): C {numbers[0]}, ctypes {got}")
        elif kind == "field":
            struct, field = name.split(".")
            seen_fields.add(name)
            descriptor = getattr(getattr(_raw, struct), field)
            if (descriptor.offset, descriptor.size) != tuple(numbers):
                errors.append(f"{name}: C offset/size {numbers}, ctypes {descriptor.offset}/{descriptor.size}")
        elif kind == "value":
            got = getattr(_raw, name, None)
            if got != numbers[0]:
                errors.append(f"{name}: C {numbers[0]}, Python {got}")
        else:
            errors.append(f"unexpected probe line {line!r}")

    # The probe must cover every struct and field the Python layer declares.
    for struct in _raw.STRUCTS:
        if struct.__name__ not in seen_structs:
            errors.append(f"{struct.__name__} not checked by the probe")
        for field, _ in struct._fields_:
            if f"{struct.__name__}.{field}" not in seen_fields:
                errors.append(f"{struct.__name__}.{field} not checked by the probe")

    for error in errors:
        print("FAIL:", error)
    print(f"{len(lines)} facts checked, {len(errors)} mismatches")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
