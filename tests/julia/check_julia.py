#!/usr/bin/env python3
"""Checks the Julia binding without Julia: no Julia toolchain runs here, so this is its guarantee.

    check_julia.py [--swig SWIG]              check bindings/julia/FP8RL against the header
    check_julia.py --self-test [--swig SWIG]  show that the checks catch broken wrappers

LibFP8RL.jl is read back with regular expressions written here, not with the
generator's code, and compared with SWIG's parse of the public header: every
function (name, argument count, argument and return types, and the C
prototype in its docstring against the header's own declaration), enum value,
constant, opaque handle, callback and struct field (name, order, type). The
C-to-Julia type table below is this checker's own. Every .jl file of the
package must also have balanced blocks (each `function`, `struct`, `if`, ...
closed by one `end`), the one syntax slip a reader cannot see at a glance.
Exits 77 (skipped) when swig is missing.
"""
import argparse
import os
import re
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = os.path.join(ROOT, "capi", "include", "fp8rl", "fp8rl.h")
PACKAGE = os.path.join(ROOT, "bindings", "julia", "FP8RL")
RAW_MODULE = os.path.join(PACKAGE, "src", "LibFP8RL.jl")
sys.path.insert(0, os.path.join(ROOT, "bindings", "gen"))
import model  # noqa: E402  (SWIG's parse of the header, shared with the generator)

# The Julia types the C ABI requires, by C spelling (Base's C aliases and fixed-width ints).
JULIA_PRIMITIVE = {
    "void": "Cvoid", "char": "Cchar", "int": "Cint", "unsigned int": "Cuint", "float": "Cfloat",
    "double": "Cdouble", "size_t": "Csize_t", "int8_t": "Int8", "uint8_t": "UInt8",
    "int16_t": "Int16", "uint16_t": "UInt16", "int32_t": "Int32", "uint32_t": "UInt32",
    "int64_t": "Int64", "uint64_t": "UInt64",
}


def expected_julia_type(t, api):
    if t.kind == "name":
        return JULIA_PRIMITIVE.get(t.name, t.name)
    if t.kind == "array":
        return f"NTuple{{{t.length}, {expected_julia_type(t.target, api)}}}"
    if t.kind == "pointer":
        if t.target.kind == "name" and t.target.name == "char" and t.target.const:
            return "Cstring"
        return f"Ptr{{{expected_julia_type(t.target, api)}}}"
    raise ValueError(f"no Julia type for {t}")


# ---- reading LibFP8RL.jl back -------------------------------------------------

WRAPPER = re.compile(
    r'"""\n    (?P<usage>[^\n]*)\n\n```c\n(?P<prototype>[^\n]*)\n```\n"""\n'
    r"function (?P<name>\w+)\((?P<params>[^)]*)\)\n"
    r"    @ccall \$\(_symbol\(:(?P<symbol>\w+)\)\)\((?P<args>[^\n]*)\)::(?P<ret>[^\n]+)\nend\n")
STRUCT = re.compile(r"^struct (\w+)\n((?:    \w+::[^\n]+\n)*)end$", re.M)
OPAQUE = re.compile(r"^mutable struct (\w+) end$", re.M)
ALIAS = re.compile(r"^const (\w+) = (Cint|Ptr\{Cvoid\})(?=\s|$)", re.M)
VALUE = re.compile(r"^const (\w+) = (?:(\w+)\()?(0x[0-9a-f]+|-?\d+)\)?$", re.M)


def split_arguments(text):
    """'a::Ptr{X}, b::Int64' -> [('a', 'Ptr{X}'), ('b', 'Int64')], splitting outside braces."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text + ","):
        depth += (ch == "{") - (ch == "}")
        if ch == "," and depth == 0:
            if text[start:i].strip():
                parts.append(text[start:i].strip())
            start = i + 1
    return [tuple(p.split("::", 1)) for p in parts]


def read_module(text):
    wrappers = {m["name"]: m for m in WRAPPER.finditer(text)}
    structs = {name: [tuple(line.strip().split("::", 1)) for line in body.splitlines()]
               for name, body in STRUCT.findall(text)}
    return wrappers, structs, set(OPAQUE.findall(text)), dict(ALIAS.findall(text)), VALUE.findall(text)


# ---- the header's own declarations, for the docstring prototypes -------------

def _normalized(declaration):
    text = re.sub(r"\s+", " ", declaration.replace("FP8RL_API", "")).strip()
    # An array parameter is a pointer in C (`uint8_t id[128]` declares `uint8_t* id`), as the generator writes it.
    text = re.sub(r"(\w+)\s*\[\s*\w*\s*\]", r"*\1", text)
    return re.sub(r"\s*([*(),])\s*", r"\1", text)


def header_prototypes(header_text):
    body = re.sub(r"/\*.*?\*/|//[^\n]*", "", header_text, flags=re.S)
    found = {}
    for declaration in re.findall(r"FP8RL_API\s+([^;{]*?\([^;{]*?\))\s*;", body, flags=re.S):
        name = re.search(r"(\w+)\s*\(", declaration).group(1)
        found[name] = _normalized(declaration)
    return found


# ---- the checks ----------------------------------------------------------------

def check_functions(api, wrappers, prototypes):
    problems = []
    for f in api.functions:
        w = wrappers.get(f.name)
        if w is None:
            problems.append(f"{f.name}: no wrapper (or its docstring/body does not have the generated shape)")
            continue
        if w["symbol"] != f.name:
            problems.append(f"{f.name}: calls symbol {w['symbol']}")
        params = [p.strip() for p in w["params"].split(",") if p.strip()]
        args = split_arguments(w["args"])
        if len(args) != len(f.params) or len(params) != len(f.params):
            problems.append(f"{f.name}: {len(params)} parameters / {len(args)} ccall arguments, "
                            f"the header has {len(f.params)}")
            continue
        for i, (param, (arg_name, arg_type), c) in enumerate(zip(params, args, f.params)):
            if param != arg_name:
                problems.append(f"{f.name}: parameter {i} is {param} but the ccall passes {arg_name}")
            want = expected_julia_type(c.type, api)
            if arg_type != want:
                problems.append(f"{f.name}: argument {c.name} is {arg_type}, C {c.type} needs {want}")
        want_ret = expected_julia_type(f.ret, api)
        if w["ret"] != want_ret:
            problems.append(f"{f.name}: returns {w['ret']}, C {f.ret} needs {want_ret}")
        if _normalized(w["prototype"]) != prototypes.get(f.name):
            problems.append(f"{f.name}: docstring prototype {w['prototype']!r} is not the header's "
                            f"{prototypes.get(f.name)!r}")
        if w["usage"] != f"{f.name}({w['params']})":
            problems.append(f"{f.name}: docstring signature {w['usage']!r} does not match the function")
    for extra in sorted(set(wrappers) - {f.name for f in api.functions}):
        problems.append(f"{extra}: a wrapper for a function the header does not declare")
    return problems


def check_types(api, structs, opaque, aliases, values):
    problems = []
    for s in api.structs:
        fields = structs.get(s.name)
        want = [(f.name, expected_julia_type(f.type, api)) for f in s.fields]
        if fields != want:
            problems.append(f"struct {s.name}: fields {fields} but the header needs {want}")
    problems += [f"struct {n}: not in the header" for n in sorted(set(structs) - {s.name for s in api.structs})]
    if opaque != set(api.opaque):
        problems.append(f"opaque handles {sorted(opaque)} but the header has {sorted(api.opaque)}")
    for e in api.enums:
        if aliases.get(e.name) != "Cint":
            problems.append(f"enum {e.name}: must be an alias of Cint, is {aliases.get(e.name)}")
    for cb in api.callbacks:
        if aliases.get(cb.name) != "Ptr{Cvoid}":
            problems.append(f"callback {cb.name}: must be Ptr{{Cvoid}}, is {aliases.get(cb.name)}")
    want_values = {c.name: (None, c.value) for c in api.constants}
    want_values.update({name: (e.name, value) for e in api.enums for name, value in e.values})
    got_values = {name: (wrapper or None, int(number, 0)) for name, wrapper, number in values}
    for name in sorted(set(want_values) | set(got_values)):
        if want_values.get(name) != got_values.get(name):
            problems.append(f"{name}: is {got_values.get(name)}, the header says {want_values.get(name)} "
                            "(enum type, value)")
    return problems


def check_module(text, api, prototypes):
    wrappers, structs, opaque, aliases, values = read_module(text)
    return check_functions(api, wrappers, prototypes) + check_types(api, structs, opaque, aliases, values)


# ---- block balance --------------------------------------------------------------

OPENERS = {"function", "macro", "struct", "module", "baremodule", "if", "for", "while", "let",
           "begin", "quote", "try", "do"}


def block_balance(text):
    """(opened, closed) block counts outside strings, comments and brackets.

    Inside () and [] `end` and `begin` index arrays and `for`/`if` belong to
    comprehensions, so keywords there are not counted; `abstract type`,
    `primitive type` and `mutable struct` open one block each."""
    text = re.sub(r'"""(?:\\.|[^\\])*?"""', '""', text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    text = re.sub(r"#=.*?=#", "", text, flags=re.S)
    text = re.sub(r"#[^\n]*", "", text)
    text = re.sub(r"'(?:\\.|[^'\\])'", "' '", text)
    opened = closed = depth = 0
    for token in re.finditer(r"[()\[\]]|(?<![\w.:@])[a-z]+\b(?!!)", text):
        word = token.group(0)
        if word in "([":
            depth += 1
        elif word in ")]":
            depth -= 1
        elif depth == 0 and (word in OPENERS or word == "type" and
                             re.search(r"\b(abstract|primitive)\s+$", text[:token.start()])):
            opened += 1
        elif depth == 0 and word == "end":
            closed += 1
    return opened, closed


def check_blocks(paths):
    problems = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            opened, closed = block_balance(f.read())
        if opened != closed:
            problems.append(f"{os.path.relpath(path, ROOT)}: {opened} blocks opened, {closed} `end`s")
    return problems


def julia_files():
    return sorted(os.path.join(d, n) for d, _, names in os.walk(PACKAGE) for n in names if n.endswith(".jl"))


# ---- self-test: each mutation of a correct module must be reported ------------

MUTATIONS = [
    ("renamed wrapper", r"function fp8rl_policy_generate\(", "function fp8rl_policy_generat("),
    ("wrong symbol", r"_symbol\(:fp8rl_rollout_count\)", "_symbol(:fp8rl_rollout_copy)"),
    ("dropped argument", r", seeds::Ptr\{UInt64\}", ""),
    ("narrowed argument", r"num_prompts::Int64", "num_prompts::Int32"),
    ("const char* as Ptr{UInt8}", r"folder::Cstring", "folder::Ptr{UInt8}"),
    ("wrong return type", r"\)::Cstring\nend", ")::Ptr{UInt8}\nend"),
    ("wrong prototype", r"```c\nfp8rl_status fp8rl_trainer_step\(fp8rl_trainer\* trainer",
     "```c\nfp8rl_status fp8rl_trainer_step(fp8rl_policy* trainer"),
    ("missing wrapper", r'"""\n    fp8rl_rollout_destroy\(.*?\nend\n', ""),
    ("enum value", r"FP8RL_ERROR_IO = fp8rl_status\(5\)", "FP8RL_ERROR_IO = fp8rl_status(6)"),
    ("constant value", r"FP8RL_MAX_EOS_TOKEN_IDS = \d+", "FP8RL_MAX_EOS_TOKEN_IDS = 7"),
    ("swapped struct fields", r"    temperature::Cfloat\n    top_k::Int32\n", "    top_k::Int32\n    temperature::Cfloat\n"),
    ("array length", r"NTuple\{8, Int64\}", "NTuple{7, Int64}"),
    ("enum not Cint", r"const fp8rl_dtype = Cint", "const fp8rl_dtype = UInt32"),
    ("lost opaque handle", r"mutable struct fp8rl_trainer end\n", ""),
]


def self_test(text, api, prototypes):
    failures = []
    if check_module(text, api, prototypes):
        failures.append("the committed module itself does not pass")
    for label, pattern, replacement in MUTATIONS:
        mutated, count = re.subn(pattern, lambda _: replacement, text, count=1, flags=re.S)
        if count != 1:
            failures.append(f"{label}: pattern not found, the mutation tests nothing")
        elif not check_module(mutated, api, prototypes):
            failures.append(f"{label}: not detected")
    for label, source in [("missing end", "function f(x)\n    if x\n        1\n    end\n"),
                          ("extra end", "struct S\n    a::Int\nend\nend\n")]:
        opened, closed = block_balance(source)
        if opened == closed:
            failures.append(f"block balance: {label} not detected")
    fine = 'function f(a)\n    b = [x for x in a if x > 0]\n    s = "end"  # end\n    a[end], a[begin]\n' \
           '    map(a) do x\n        x\n    end\nend\nabstract type T end\nmutable struct M end\n'
    if block_balance(fine)[0] != block_balance(fine)[1]:
        failures.append(f"block balance: balanced code reported unbalanced {block_balance(fine)}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--swig", default="swig")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    swig = shutil.which(args.swig)
    if swig is None:
        print(f"SKIP: {args.swig} not found; cannot parse the header")
        return 77
    api = model.read_header(HEADER, swig)
    with open(HEADER, encoding="utf-8") as f:
        prototypes = header_prototypes(f.read())
    with open(RAW_MODULE, encoding="utf-8") as f:
        text = f.read()
    if args.self_test:
        failures = self_test(text, api, prototypes)
        for failure in failures:
            print("FAIL:", failure)
        if not failures:
            print(f"OK: all {len(MUTATIONS)} mutations and both block slips detected")
        return 1 if failures else 0
    problems = check_module(text, api, prototypes) + check_blocks(julia_files())
    for problem in problems:
        print("FAIL:", problem)
    if not problems:
        print(f"OK: {len(api.functions)} wrappers, {len(api.structs)} structs, "
              f"{sum(len(e.values) for e in api.enums)} enum values, {len(api.constants)} constants "
              f"match the header; {len(julia_files())} .jl files have balanced blocks")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
