#!/usr/bin/env bash
# Builds the metaguard wheel into dist/: metaguard-clang-tidy (clang-tidy with
# the checks built in, linked statically against LLVM and Clang),
# metaguard-clangd and the driver metaguard-tidy, tagged with the platform tag
# auditwheel finds for them. Install it with
#   pip install dist/metaguard-*.whl
# Set METAGUARD_DIST_DIR to write elsewhere; the build itself is the usual
# $METAGUARD_BUILD_DIR (tools/setup.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

dist="${METAGUARD_DIST_DIR:-$METAGUARD_ROOT/dist}"
tools_env="${METAGUARD_WHEEL_TOOLS:-$METAGUARD_CACHE_DIR/wheel-tools}"

# The packaging tools, pinned, installed once (again when the pins change).
metaguard_wheel_tools() {
  local requirements="$METAGUARD_ROOT/tools/wheel-requirements.txt"
  local stamp="$tools_env/.metaguard-stamp" want
  want=$(grep -v '^[[:space:]]*#' "$requirements" | sha256sum | cut -d' ' -f1)
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && return 0
  [ -x "$tools_env/bin/python" ] || python3 -m venv "$tools_env"
  "$tools_env/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
  echo "$want" >"$stamp"
}

metaguard_cache_value() {
  sed -n "s/^$1:[A-Z]*=//p" "$METAGUARD_BUILD_DIR/CMakeCache.txt"
}

metaguard_install_packages
metaguard_wheel_tools
metaguard_build metaguard-clang-tidy metaguard-clangd
version=$(metaguard_cache_value CMAKE_PROJECT_VERSION)
major=$(metaguard_cache_value METAGUARD_LLVM_VERSION)

# The wheel's tree: the package of packaging/wheel, the binaries (stripped:
# the symbol tables are half their size), Clang's builtin headers where the
# binaries look for them (<bin>/../lib/clang/N/include), the driver's modules.
stage="$METAGUARD_BUILD_DIR/wheel"
rm -rf "$stage"
mkdir -p "$stage"
cp -r "$METAGUARD_ROOT/packaging/wheel/." "$stage/"
cp "$METAGUARD_ROOT/README.md" "$stage/"
package="$stage/metaguard_tools"
sed -i "s/^__version__ = .*/__version__ = \"$version\"/" "$package/__init__.py"
mkdir -p "$package/bin" "$package/driver" "$package/lib/clang/$major"
for binary in metaguard-clang-tidy metaguard-clangd; do
  strip -o "$package/bin/$binary" "$METAGUARD_BUILD_DIR/bin/$binary"
done
cp "$METAGUARD_ROOT"/tools/metaguard_*.py "$package/driver/"
echo "$version" >"$package/driver/metaguard-version.txt"
cp -r "/usr/lib/llvm-$major/lib/clang/$major/include" "$package/lib/clang/$major/"

"$tools_env/bin/python" -m build --wheel --no-isolation --outdir "$stage/dist" "$stage" >"$stage/build.log" ||
  { cat "$stage/build.log"; exit 1; }
mkdir -p "$dist"
rm -f "$dist"/metaguard-*.whl
# auditwheel names the oldest manylinux platform the binaries' symbol versions
# allow and copies in the shared libraries outside that policy (those of
# metaguard-clangd; metaguard-clang-tidy needs none of LLVM's or Clang's).
PATH="$tools_env/bin:$PATH" auditwheel repair --wheel-dir "$dist" "$stage"/dist/metaguard-*.whl
wheel=$(ls "$dist"/metaguard-*.whl)
PATH="$tools_env/bin:$PATH" auditwheel show "$wheel"
echo "metaguard: wrote $wheel"
