#!/usr/bin/env python3
"""One seeded rollout through C, Python and Rust must give identical tokens and log-probs.

Usage: check_same_rollout.py C_PROGRAM CARGO RUST_WORKSPACE, with FP8RL_LIBRARY
(Python), FP8RL_LIB_DIR (Rust) and PYTHONPATH naming this build's library and
package. Each program prints, per completion, its tokens and the bit pattern
of every log-prob (seeded_rollout.c is the reference); the outputs are
compared as text, so equal means bit for bit. Both recipes are run, BF16 and
FP8 (linear layers, KV cache and attention), and must differ from each other:
otherwise the recipe did not reach the library and the comparison says less.
Exits 77 (skipped) after comparing C with Python when cargo is missing.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RECIPES = ("bf16", "fp8")
COMPLETIONS, NEW_TOKENS = 3, 8


def run(command, cwd=None):
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"FAIL: {' '.join(command)} exited {done.returncode}:\n{done.stderr}")
    return done.stdout


def well_formed(output):
    """The reference must hold COMPLETIONS completions of NEW_TOKENS tokens, each with its log-probs."""
    lines = output.splitlines()
    if len(lines) != 2 * COMPLETIONS:
        return False
    for tokens, logprobs in zip(lines[0::2], lines[1::2]):
        if not (tokens.startswith("tokens:") and logprobs.startswith("logprobs:")):
            return False
        if len(tokens.split()) != NEW_TOKENS + 1 or len(logprobs.split()) != NEW_TOKENS + 1:
            return False
    return True


def main(c_program, cargo, workspace):
    programs = {
        "C": lambda recipe: [c_program, recipe],
        "Python": lambda recipe: [sys.executable, os.path.join(HERE, "seeded_rollout.py"), recipe],
    }
    have_cargo = os.access(cargo, os.X_OK)
    if have_cargo:
        programs["Rust"] = lambda recipe: [cargo, "run", "--quiet", "--offline", "--locked",
                                           "--example", "seeded_rollout", "--", recipe]
    outputs = {}
    for recipe in RECIPES:
        for language, command in programs.items():
            outputs[recipe, language] = run(command(recipe), cwd=workspace if language == "Rust" else None)
    failures = []
    for recipe in RECIPES:
        reference = outputs[recipe, "C"]
        if not well_formed(reference):
            failures.append(f"{recipe}: the C reference is not {COMPLETIONS} x {NEW_TOKENS} tokens:\n{reference}")
        for language in programs:
            if outputs[recipe, language] != reference:
                failures.append(f"{recipe}: {language} differs from C\nC:\n{reference}{language}:\n"
                                f"{outputs[recipe, language]}")
    if outputs["bf16", "C"] == outputs["fp8", "C"]:
        failures.append("the BF16 and FP8 recipes gave the same rollout: the recipe is not applied")
    for failure in failures:
        print("FAIL:", failure)
    if failures:
        return 1
    print(f"OK: {', '.join(programs)} give the same tokens and log-prob bits for {', '.join(RECIPES)}")
    print(outputs["fp8", "C"], end="")
    if not have_cargo:
        print("SKIP: cargo not found; Rust not compared")
        return 77
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
