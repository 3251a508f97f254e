#!/usr/bin/env python3
"""`pip install ./bindings/python` works: the package ships its own library and checks its version.

Usage: check_pip_install.py WORK_DIR OTHER_LIBRARY
Installs the package into a fresh virtual environment under WORK_DIR (from
the system's scikit-build-core, without network or build isolation; the CMake
build directory is kept there so a rerun is incremental), then checks from
outside the source tree with a clean environment that:
- the package loads the libfp8rl.so it ships, which has RUNPATH $ORIGIN and py.typed beside it;
- FP8RL_LIBRARY switches it to another build (OTHER_LIBRARY), and a missing file is a clear ImportError;
- the pyproject, header and CMake versions agree.
Exits 77 (skipped) when scikit-build-core or venv is not available.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import venv

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "bindings", "python")


def versions():
    """(pyproject, header, CMake) versions, each read with its own pattern."""
    with open(os.path.join(PACKAGE, "pyproject.toml")) as f:
        pyproject = re.search(r'^version = "([\d.]+)"', f.read(), re.M).group(1)
    with open(os.path.join(ROOT, "capi", "include", "fp8rl", "fp8rl.h")) as f:
        text = f.read()
    header = ".".join(re.search(rf"#define FP8RL_VERSION_{part} (\d+)", text).group(1)
                      for part in ("MAJOR", "MINOR", "PATCH"))
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        cmake = re.search(r"project\(fp8rl VERSION ([\d.]+)", f.read()).group(1)
    return pyproject, header, cmake


def run(python, code, **env_changes):
    """Runs `code` in the venv's python from an empty directory, without the test's environment."""
    env = {k: v for k, v in os.environ.items() if k not in ("FP8RL_LIBRARY", "PYTHONPATH", "LD_PRELOAD")}
    env.update(env_changes)
    with tempfile.TemporaryDirectory() as cwd:
        return subprocess.run([python, "-c", code], cwd=cwd, env=env, capture_output=True, text=True)


def main(work_dir, other_library):
    try:
        import scikit_build_core  # noqa: F401
    except ImportError:
        print("SKIP: scikit-build-core is not installed (./run installs it)")
        return 77
    pyproject, header, cmake = versions()
    assert pyproject == header == cmake, f"versions disagree: pyproject {pyproject}, header {header}, CMake {cmake}"

    environment = os.path.join(work_dir, "venv")
    shutil.rmtree(environment, ignore_errors=True)
    venv.create(environment, system_site_packages=True, with_pip=True)
    python = os.path.join(environment, "bin", "python")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                    "-C", "cmake.define.FP8RL_CUDA=OFF", "-C", f"build-dir={os.path.join(work_dir, 'cmake')}",
                    PACKAGE], check=True)

    probe = run(python, "import fp8rl, os, sys; import fp8rl._library as L; "
                        "print(L.library_path()); print(fp8rl.__version__); "
                        "print(os.path.isfile(os.path.join(os.path.dirname(fp8rl.__file__), 'py.typed')))")
    assert probe.returncode == 0, probe.stderr
    path, version, typed = probe.stdout.split()
    site = os.path.realpath(environment)
    assert os.path.realpath(path).startswith(site) and os.path.basename(path) == "libfp8rl.so", path
    assert version == header, f"the shipped library is {version}, the header {header}"
    assert typed == "True", "py.typed is not installed"
    dynamic = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
    assert re.search(r"RUNPATH.*\[\$ORIGIN\]", dynamic), dynamic

    other = run(python, "import fp8rl; print(fp8rl.library_path())", FP8RL_LIBRARY=other_library)
    assert other.returncode == 0 and os.path.samefile(other.stdout.strip(), other_library), other.stderr

    missing = run(python, "import fp8rl", FP8RL_LIBRARY=os.path.join(work_dir, "no-such-libfp8rl.so"))
    assert missing.returncode != 0 and "ImportError" in missing.stderr and "FP8RL_LIBRARY" in missing.stderr, \
        missing.stderr
    print(f"OK: pip-installed fp8rl {version} loads {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
