#!/usr/bin/env bash
# Shared set-up for the README's commands: installs the Debian packages that
# are missing, then configures and builds metaguard in $METAGUARD_BUILD_DIR
# (default: build/). Idempotent: a second run installs nothing and rebuilds
# only what changed. Sourced, not run: it defines metaguard_setup (everything,
# for tools/run-tests.sh) and metaguard_setup_main (what the main job,
# tools/run-examples.sh, needs: the plugin, the driver and the examples'
# compile database).
set -euo pipefail

METAGUARD_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
METAGUARD_BUILD_DIR="${METAGUARD_BUILD_DIR:-$METAGUARD_ROOT/build}"
METAGUARD_TORCH2_BUILD_DIR="${METAGUARD_TORCH2_BUILD_DIR:-$METAGUARD_BUILD_DIR-torch2}"
METAGUARD_JOBS="${METAGUARD_JOBS:-$(nproc)}"
# Release: debug information nearly doubles the compile time of every
# LibTorch TU (measured: 97 s vs 53 s for one test file). Set
# METAGUARD_BUILD_TYPE=RelWithDebInfo to debug the runtime.
METAGUARD_BUILD_TYPE="${METAGUARD_BUILD_TYPE:-Release}"
# Further LLVM majors to build the plugin for, besides 19 (";"-separated,
# e.g. "14;16;22"; each in $METAGUARD_BUILD_DIR/llvm<N>/). Empty: 19 alone.
METAGUARD_EXTRA_LLVM_VERSIONS="${METAGUARD_EXTRA_LLVM_VERSIONS:-}"
# Caches that outlive a clone, so a CI re-run on the same machine starts
# warm: the compiler cache (ccache's own default directory) and the Python
# test environment.
METAGUARD_CACHE_DIR="${METAGUARD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/metaguard}"
METAGUARD_PYTHON_ENV="${METAGUARD_PYTHON_ENV:-$METAGUARD_CACHE_DIR/python}"
# LLVM majors Debian 12 lacks, from Debian unstable (METAGUARD_SID_LLVM_VERSIONS).
source "$METAGUARD_ROOT/tools/llvm-sid.sh"
# CMake's precompiled headers are included with -include; ccache caches such
# compilations only with this sloppiness.
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
# Paths inside the clone are hashed relative to it, so a fresh clone in
# another folder (as CI makes) still hits the cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$METAGUARD_ROOT}"
# CMake reads the launcher from the environment, so the projects the tests
# configure (packaging, whole-program, sanitizers) use the cache as well.
# Called again once the packages are installed: on a new machine ccache
# arrives with them, and the first build is the one worth caching.
metaguard_use_ccache() {
  if [ -z "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ] && command -v ccache >/dev/null 2>&1; then
    export CMAKE_CXX_COMPILER_LAUNCHER=ccache
  fi
}
metaguard_use_ccache

# The main job: build the plugin (clang-19 owns Clang's CMake package,
# libclang-19-dev and llvm-19-dev hold the headers and LLVM's), run it with
# clang-tidy-19 through the driver (python3), and configure the project for
# the examples' compile database (the runtime's configuration finds LibTorch
# and nlohmann-json; clang-tidy parses the examples with LibTorch's headers).
# git: the driver's default source root. No test framework, editor or gRPC:
# that build configures without tests and benchmarks, and metaguard-clangd is
# built only where its gRPC libraries are installed (clangd/CMakeLists.txt).
METAGUARD_MAIN_PACKAGES=(
  cmake ninja-build g++ python3 git ccache
  clang-19 clang-tidy-19 libclang-19-dev llvm-19-dev
  libtorch-dev nlohmann-json3-dev
)
# Everything else tools/run-tests.sh needs, on top of the main job's.
METAGUARD_PACKAGES=(
  "${METAGUARD_MAIN_PACKAGES[@]}"
  python3-venv clang-format-19 llvm-19-tools
  libgtest-dev libgmock-dev libbenchmark-dev
  libclang-rt-19-dev
  # metaguard-clang-tidy (clang-tidy/CMakeLists.txt): what the static LLVM and
  # Clang libraries call outside themselves.
  zlib1g-dev libzstd-dev libz3-dev
  # metaguard-clangd: the runtime libraries of clangd's remote index, which
  # Debian's static clangd libraries need (clangd/CMakeLists.txt), and the
  # editor its end-to-end test drives.
  libgrpc++1.51 libgrpc29 libprotobuf32 libabsl20220623 neovim
  libicu72 dpkg-dev file
  # tools/abi-check.sh: abidw and abidiff (libabigail), which compare the
  # shared runtime library's ABI with the release's.
  abigail-tools
  # Debian's LibTorch calls the BLAS that the alternatives system names
  # libblas.so.3; the reference one it pulls in is about 20x slower on a
  # forward than OpenBLAS (docs/benchmarks.md, "BLAS"). Installing OpenBLAS
  # makes it the alternative with the highest priority; of its builds, the
  # pthread one measured fastest here (bench/run_blas.sh).
  libopenblas0-pthread
)
# dpkg-dev: dpkg-shlibdeps, for the metaguard-clangd .deb's dependencies; file:
# CPack's DEB generator runs it on every installed file before dpkg-shlibdeps
# (a minimal Debian has no file).
# The tests validate SARIF with Microsoft's validator, an npm package (a .NET
# program; libicu72 above is its ICU). npm comes from Debian's nodejs/npm
# unless some other node is already on PATH (e.g. NodeSource's, which
# bundles npm and conflicts with Debian's npm package).
METAGUARD_NODE_PACKAGES=(nodejs npm)
METAGUARD_SARIF_MULTITOOL_VERSION=5.7.0
METAGUARD_SARIF_MULTITOOL_DIR="$METAGUARD_BUILD_DIR/sarif-multitool"

# What a further LLVM major needs: its clang-tidy, clang-tidy's headers
# (libclang-N-dev, which also holds clangd's static libraries where Debian
# ships them) and its CMake packages (llvm-N-dev, clang-N). A major Debian 12
# lacks (METAGUARD_SID_LLVM_VERSIONS) comes from Debian unstable into the
# cache instead (tools/llvm-sid.sh), with nothing installed but debootstrap.
metaguard_llvm_packages() {
  local major
  for major in ${METAGUARD_EXTRA_LLVM_VERSIONS//;/ }; do
    if metaguard_is_sid_major "$major"; then
      echo debootstrap
    else
      echo "clang-$major clang-tidy-$major libclang-$major-dev llvm-$major-dev"
    fi
  done
}

# "all" (the default): every package of every test suite; "main": the main
# job's (metaguard_setup_main sets it).
METAGUARD_SETUP_PROFILE="${METAGUARD_SETUP_PROFILE:-all}"

metaguard_missing_packages() {
  local pkg packages=("${METAGUARD_PACKAGES[@]}")
  if [ "$METAGUARD_SETUP_PROFILE" = main ]; then
    packages=("${METAGUARD_MAIN_PACKAGES[@]}")
  else
    command -v npm >/dev/null 2>&1 || packages+=("${METAGUARD_NODE_PACKAGES[@]}")
  fi
  # shellcheck disable=SC2207
  packages+=($(metaguard_llvm_packages))
  for pkg in "${packages[@]}"; do
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
  metaguard_use_ccache
}

# Configures (which also writes compile_commands.json) and builds the given
# targets, or everything.
metaguard_build() {
  local extra=()
  if [ -x "$METAGUARD_PYTHON_ENV/bin/python" ]; then
    extra+=(-DMETAGUARD_PYTHON="$METAGUARD_PYTHON_ENV/bin/python")
    # The checks' real-header tests also run on the wheel's LibTorch 2.x headers.
    local torch2
    torch2=$(metaguard_torch2_dir) && extra+=(-DMETAGUARD_CHECK_SECOND_TORCH="$torch2")
  fi
  if [ "$METAGUARD_SETUP_PROFILE" = main ]; then
    # Without the test suites and benchmarks (GoogleTest and Google Benchmark
    # are not installed for it: their configuration would fail), unless this build folder
    # was configured with them already (tools/run-tests.sh ran here first):
    # then it stays as it is.
    [ -f "$METAGUARD_BUILD_DIR/CMakeCache.txt" ] ||
      extra+=(-DMETAGUARD_BUILD_TESTS=OFF -DMETAGUARD_BUILD_BENCH=OFF)
  else
    extra+=(-DMETAGUARD_BUILD_TESTS=ON -DMETAGUARD_BUILD_BENCH=ON)
  fi
  # A further major from elsewhere than /usr/lib/llvm-N (metaguard_sid_prepare
  # exports these): its LLVM folder and the clang-tidy its tests run.
  local major var
  for major in ${METAGUARD_EXTRA_LLVM_VERSIONS//;/ }; do
    for var in "METAGUARD_LLVM${major}_ROOT" "METAGUARD_LLVM${major}_CLANG_TIDY"; do
      if [ -n "${!var:-}" ]; then extra+=("-D$var=${!var}"); fi
    done
  done
  cmake -S "$METAGUARD_ROOT" -B "$METAGUARD_BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE="$METAGUARD_BUILD_TYPE" \
    -DMETAGUARD_EXTRA_LLVM_VERSIONS="$METAGUARD_EXTRA_LLVM_VERSIONS" "${extra[@]}" >/dev/null
  local targets=()
  [ "$#" -gt 0 ] && targets=(--target "$@")
  cmake --build "$METAGUARD_BUILD_DIR" -j "$METAGUARD_JOBS" "${targets[@]}"
}

# Installs the pinned SARIF validator into the build folder (once; about
# 100 MB) and prints nothing when it is already there. The Linux package holds
# a self-contained binary that the tests run directly.
metaguard_install_sarif_validator() {
  local tool="$METAGUARD_SARIF_MULTITOOL_DIR/node_modules/@microsoft/sarif-multitool-linux"
  if [ -x "$tool/Sarif.Multitool" ] && grep -q "\"version\": \"$METAGUARD_SARIF_MULTITOOL_VERSION\"" "$tool/package.json"; then
    return 0
  fi
  echo "metaguard: installing @microsoft/sarif-multitool@$METAGUARD_SARIF_MULTITOOL_VERSION (npm)"
  mkdir -p "$METAGUARD_SARIF_MULTITOOL_DIR"
  npm install --prefix "$METAGUARD_SARIF_MULTITOOL_DIR" --no-save --no-audit --no-fund \
    --loglevel=error \
    "@microsoft/sarif-multitool@$METAGUARD_SARIF_MULTITOOL_VERSION" \
    "@microsoft/sarif-multitool-linux@$METAGUARD_SARIF_MULTITOOL_VERSION" >/dev/null
  # Its postinstall script only sets this bit, and newer npm skips such scripts.
  chmod u+x "$tool/Sarif.Multitool"
}

# The pinned Python test environment (tools/python-requirements.txt): a
# virtual environment outside the clone, installed once and again only when
# the requirements change (a stamp holds the hash of their non-comment lines,
# so editing a comment installs nothing). About 6 GB, most of it
# the CUDA libraries the torch wheel depends on; a first install takes a few
# minutes.
metaguard_python_env() {
  local requirements="$METAGUARD_ROOT/tools/python-requirements.txt"
  local stamp="$METAGUARD_PYTHON_ENV/.metaguard-stamp" want
  want=$(grep -v '^[[:space:]]*#' "$requirements" | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  echo "metaguard: installing the Python test environment into $METAGUARD_PYTHON_ENV"
  if [ ! -x "$METAGUARD_PYTHON_ENV/bin/python" ]; then
    mkdir -p "$(dirname "$METAGUARD_PYTHON_ENV")"
    python3 -m venv "$METAGUARD_PYTHON_ENV" || return 1
  fi
  "$METAGUARD_PYTHON_ENV/bin/python" -m pip install -q --disable-pip-version-check \
    -r "$requirements" || return 1
  echo "$want" >"$stamp"
}

# The LibTorch 2.x inside the environment's torch wheel (its package folder;
# CMake finds it through <folder>/share/cmake). Fails when there is none.
metaguard_torch2_dir() {
  local dir
  for dir in "$METAGUARD_PYTHON_ENV"/lib/python3*/site-packages/torch; do
    [ -f "$dir/share/cmake/Torch/TorchConfig.cmake" ] && { echo "$dir"; return 0; }
  done
  return 1
}

# Configures and builds the runtime, its tests and the examples against
# LibTorch 2.x in a build folder of its own (the checks and benchmarks are the
# main build's): the second LibTorch of tools/run-tests.sh. The examples are
# built because the interop suite runs one (test_hf_minilm.py skips without
# it) and because they must keep compiling against the API on both versions.
metaguard_build_torch2() {
  local torch2
  torch2=$(metaguard_torch2_dir) || { echo "metaguard: no LibTorch 2.x in $METAGUARD_PYTHON_ENV" >&2; return 1; }
  cmake -S "$METAGUARD_ROOT" -B "$METAGUARD_TORCH2_BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE="$METAGUARD_BUILD_TYPE" -DCMAKE_PREFIX_PATH="$torch2/share/cmake" \
    -DMETAGUARD_BUILD_CHECKS=OFF -DMETAGUARD_BUILD_EXAMPLES=ON -DMETAGUARD_BUILD_BENCH=OFF \
    -DMETAGUARD_PYTHON="$METAGUARD_PYTHON_ENV/bin/python" >/dev/null &&
    cmake --build "$METAGUARD_TORCH2_BUILD_DIR" -j "$METAGUARD_JOBS"
}

metaguard_setup() {
  metaguard_install_packages
  metaguard_build "$@"
}

# The main job's set-up: its packages only, and a build without tests.
metaguard_setup_main() {
  METAGUARD_SETUP_PROFILE=main
  metaguard_install_packages
  metaguard_build "$@"
}
