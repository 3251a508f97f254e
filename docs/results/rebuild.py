#!/usr/bin/env python3
"""Rebuilds the generated parts of docs/results.md from the committed run summaries.

usage: rebuild.py [--check] PATH/TO/fp8rl PATH/TO/results.md

Each block of results.md between
    <!-- report NAME: ARGS -->
and
    <!-- end report NAME -->
is replaced by the command (as run from the repository's root), what `fp8rl compare ARGS --out
results/NAME` prints (ARGS name the summaries.json with --from, relative to the folder of
results.md, and may pick runs with --runs), and links to the plots it writes there
(results/NAME/compare.png and dose.png).

--check writes nothing: it rebuilds into a temporary folder and exits 1 if any block differs from
what results.md holds, so a test can tell that the tables are the committed summaries' own.
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

BLOCK = re.compile(r"(<!-- report (?P<name>[\w-]+): (?P<args>.*?) -->\n)(?P<body>.*?)(<!-- end report (?P=name) -->)",
                   re.S)


def generated(fp8rl, docs, name, args, out_root):
    out = os.path.join(out_root, name)
    given = shlex.split(args)
    argv = [fp8rl, "compare"] + given + ["--out", out]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=docs)
    if proc.returncode != 0:
        sys.exit(f"fp8rl compare {args} failed ({proc.returncode}):\n{proc.stderr}")
    with open(os.path.join(out, "compare.md")) as f:
        table = f.read()
    # The command as a reader runs it from the repository's root.
    shown = [",".join(f"docs/{part}" for part in a.split(",")) if i > 0 and given[i - 1] == "--from" else a
             for i, a in enumerate(given)]
    command = " ".join(["build/tools/fp8rl/fp8rl", "compare"] + shown + ["--out", f"docs/results/{name}"])
    return (f"```\n{command}\n```\n\n{table}\n![Validation accuracy per seed (faint) and mean, and mismatch per step](results/{name}/compare.png)"
            f"\n\n![Final accuracy against each seed's mean mismatch](results/{name}/dose.png)\n")


def main():
    args = sys.argv[1:]
    check = args[:1] == ["--check"]
    if check:
        args = args[1:]
    if len(args) != 2:
        sys.exit(__doc__)
    fp8rl, results_md = os.path.abspath(args[0]), os.path.abspath(args[1])
    docs = os.path.dirname(results_md)
    with open(results_md) as f:
        text = f.read()
    blocks = list(BLOCK.finditer(text))
    if not blocks:
        sys.exit(f"{results_md} has no <!-- report NAME: ARGS --> blocks")
    with tempfile.TemporaryDirectory() as scratch:
        out_root = scratch if check else os.path.join(docs, "results")
        rebuilt, stale = text, []
        for block in reversed(blocks):
            body = generated(fp8rl, docs, block["name"], block["args"], out_root)
            if body != block["body"]:
                stale.append(block["name"])
            rebuilt = rebuilt[:block.start("body")] + body + rebuilt[block.end("body"):]
    if check:
        if stale:
            sys.exit(f"{results_md}: reports {', '.join(reversed(stale))} differ from their summaries; "
                     "run ./run results")
        print(f"ok: {len(blocks)} reports match their summaries")
        return
    with open(results_md, "w") as f:
        f.write(rebuilt)
    print(f"rebuilt {len(blocks)} reports in {results_md}")


if __name__ == "__main__":
    main()
