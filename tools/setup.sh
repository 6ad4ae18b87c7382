#!/usr/bin/env bash
# Shared set-up for the README's commands: installs the Debian packages that
# are missing, then configures and builds metaguard in $METAGUARD_BUILD_DIR
# (default: build/). Idempotent: a second run installs nothing and rebuilds
# only what changed. Sourced, not run: it defines metaguard_setup.
set -euo pipefail

METAGUARD_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
METAGUARD_BUILD_DIR="${METAGUARD_BUILD_DIR:-$METAGUARD_ROOT/build}"
METAGUARD_JOBS="${METAGUARD_JOBS:-$(nproc)}"

METAGUARD_PACKAGES=(
  cmake ninja-build g++ python3 git
  clang-19 clang-tidy-19 clang-format-19 libclang-19-dev llvm-19-dev llvm-19-tools
  libtorch-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
  libclang-rt-19-dev
  # metaguard-clangd: the runtime libraries of clangd's remote index, which
  # Debian's static clangd libraries need (clangd/CMakeLists.txt), and the
  # editor its end-to-end test drives.
  libgrpc++1.51 libgrpc29 libprotobuf32 libabsl20220623 neovim
)

metaguard_missing_packages() {
  local pkg
  for pkg in "${METAGUARD_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      echo "$pkg"
    fi
  done
}

metaguard_install_packages() {
  local missing
  missing=$(metaguard_missing_packages | tr '\n' ' ')
  [ -z "${missing// /}" ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "metaguard: these Debian packages are missing: $missing" >&2
    echo "metaguard: install them as root, then run this command again:" >&2
    echo "  apt-get update && apt-get install -y --no-install-recommends $missing" >&2
    exit 1
  fi
  echo "metaguard: installing $missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# Configures (which also writes compile_commands.json) and builds the given
# targets, or everything.
metaguard_build() {
  cmake -S "$METAGUARD_ROOT" -B "$METAGUARD_BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  local targets=()
  [ "$#" -gt 0 ] && targets=(--target "$@")
  cmake --build "$METAGUARD_BUILD_DIR" -j "$METAGUARD_JOBS" "${targets[@]}"
}

metaguard_setup() {
  metaguard_install_packages
  metaguard_build "$@"
}
