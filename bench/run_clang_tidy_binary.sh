#!/usr/bin/env bash
# metaguard-clang-tidy (clang-tidy with the checks built in, static) against
# the plugin loaded into Debian's clang-tidy-19: size on disk (the binary
# against clang-tidy-19 with the shared libraries it loads plus the plugin),
# start-up (`--list-checks`, fresh processes, median wall time) and one pass over an
# example (median CPU time, user + system), as ratios static / plugin. Not for
# CI: take figures on a quiet machine.
#
#   bench/run_clang_tidy_binary.sh [build-dir] [runs] [example]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
runs=${2:-5}
example=${3:-$root/examples/offload_mistakes.cpp}
static=$build/bin/metaguard-clang-tidy
plugin=$build/lib/libmetaguard_tidy.so
stock=$(readlink -f "$(command -v clang-tidy-19)")
for f in "$static" "$plugin" "$stock"; do
  [ -x "$f" ] || [ -f "$f" ] || { echo "missing $f: build metaguard-clang-tidy and metaguard_tidy" >&2; exit 1; }
done

# Bytes of a binary and of every shared library it loads, minus the C/C++
# runtime both need.
footprint() {
  local total
  total=$(stat -L -c %s "$@")
  total=$(echo "$total" | paste -sd+ | bc)
  for lib in $(ldd "$1" | awk '/=>/ { print $3 }'); do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libstdc++*|libgcc_s*|ld-linux*) ;;
      *) total=$((total + $(stat -L -c %s "$lib"))) ;;
    esac
  done
  echo "$total"
}

# Median CPU seconds (user + system) of a command over $runs fresh processes.
median_cpu() {
  local times=()
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%U %S" -o /tmp/metaguard-bench-time "$@" >/dev/null 2>&1 || true
    times+=("$(awk '{ printf "%.3f", $1 + $2 }' /tmp/metaguard-bench-time)")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

# Median wall milliseconds of a command over $runs fresh processes (start-up
# is below the 10 ms resolution of CPU times).
median_wall_ms() {
  local times=() start
  for _ in $(seq "$runs"); do
    start=$(date +%s%N)
    "$@" >/dev/null 2>&1 || true
    times+=("$(( ($(date +%s%N) - start) / 1000000 ))")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

size_static=$(footprint "$static")
size_plugin=$(footprint "$stock" "$plugin")
start_static=$(median_wall_ms "$static" --list-checks '-checks=-*,metaguard-*')
start_plugin=$(median_wall_ms "$stock" "--load=$plugin" --list-checks '-checks=-*,metaguard-*')
pass_static=$(median_cpu "$static" -p "$build" '-checks=-*,metaguard-*' "$example")
pass_plugin=$(median_cpu "$stock" "--load=$plugin" -p "$build" '-checks=-*,metaguard-*' "$example")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
printf '%-28s %14s %14s %8s\n' "" "static" "plugin" "ratio"
printf '%-28s %14s %14s %8s\n' "size on disk (MiB)" \
  "$((size_static / 1048576))" "$((size_plugin / 1048576))" "$(ratio "$size_static" "$size_plugin")"
printf '%-28s %14s %14s %8s\n' "start-up, --list-checks (ms)" "$start_static" "$start_plugin" \
  "$(ratio "$start_static" "$start_plugin")"
printf '%-28s %14s %14s %8s\n' "$(basename "$example") (s)" "$pass_static" "$pass_plugin" \
  "$(ratio "$pass_static" "$pass_plugin")"
