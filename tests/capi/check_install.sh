#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds and runs a C client
# against it twice: with find_package(fp8rl) and with pkg-config; and, where
# the build has libfp8rl_mpi, a client of find_package(fp8rl COMPONENTS mpi).
# Usage: check_install.sh <build-dir> <source-dir>
set -euo pipefail
build="$1" source="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
libdir="$(dirname "$(find "$work/prefix" -name 'libfp8rl.so' | head -n1)")"

cmake -S "$source/tests/capi/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/consumer/consumer"
if [ -e "$work/consumer/mpi_consumer" ]; then
  LD_LIBRARY_PATH="$libdir" "$work/consumer/mpi_consumer" >/dev/null
  echo "find_package(fp8rl COMPONENTS mpi): ok"
fi

export PKG_CONFIG_PATH="$libdir/pkgconfig"
sed -i "s|^prefix=.*|prefix=$work/prefix|" "$libdir/pkgconfig/fp8rl.pc"
cc -std=c99 -Wall -Werror -o "$work/pkgconfig_client" "$source/tests/capi/c_header_test.c" \
  $(pkg-config --cflags --libs fp8rl)
LD_LIBRARY_PATH="$libdir" "$work/pkgconfig_client"
echo "install, find_package and pkg-config: ok"
