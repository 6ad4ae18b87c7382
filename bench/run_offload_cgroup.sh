#!/usr/bin/env bash
# bench/run_offload.sh --cgroup: disk offload under a memory cgroup, metaguard
# (O_DIRECT and page-cache reads) against transformers and accelerate. See
# bench/run_offload.sh for what it measures.
#
#   bench/run_offload_cgroup.sh MiB [build_dir] [work_dir] [model MiB=1024] [processes=3] [runs=3] [tokens=16]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
limit_mib=${1:?usage: bench/run_offload.sh --cgroup MiB [build_dir] [work_dir] [model MiB] [processes] [runs] [tokens]}
build=${2:-$root/build-bench-t2}
work=${3:-${TMPDIR:-/tmp}/metaguard-offload-cgroup}
mib=${4:-1024}
processes=${5:-3}
runs=${6:-3}
tokens=${7:-16}
PYTHON=${PYTHON:-/root/.cache/metaguard/python/bin/python}
threads=2
# A variant that thrashes under the cap instead of being killed is stopped
# after this long and reported as failed.
timeout_s=${METAGUARD_BENCH_TIMEOUT:-300}
export OMP_NUM_THREADS=$threads OMP_WAIT_POLICY=PASSIVE TQDM_DISABLE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
  TOKENIZERS_PARALLELISM=false

controller=/sys/fs/cgroup/memory
if [ "$(id -u)" -ne 0 ]; then
  echo "run_offload --cgroup: cannot run: needs root (to create memory cgroups and drop the page cache); skipped"
  exit 0
fi
if [ ! -f "$controller/memory.limit_in_bytes" ]; then
  echo "run_offload --cgroup: cannot run: no cgroup v1 memory controller at $controller; skipped"
  exit 0
fi
if [ ! -x "$PYTHON" ]; then
  echo "run_offload --cgroup: cannot run: no Python environment at $PYTHON (tools/setup.sh: metaguard_python_env); skipped"
  exit 0
fi
# The caller's own memory cgroup: the variants' cgroups nest inside it.
own=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' /proc/self/cgroup)
parent=$controller${own%/}
if [ ! -w "$parent" ]; then
  echo "run_offload --cgroup: cannot run: $parent is not writable; skipped"
  exit 0
fi

if [ ! -f "$build/build.ninja" ]; then
  prefix=()
  if [ "${LIBTORCH:-wheel}" != system ]; then
    prefix=(-DCMAKE_PREFIX_PATH="$("$PYTHON" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')")
  fi
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMETAGUARD_BUILD_CHECKS=OFF \
    -DMETAGUARD_BUILD_TESTS=OFF -DMETAGUARD_BUILD_BENCH=ON ${prefix[@]+"${prefix[@]}"} >/dev/null
fi
. "$root/bench/build_bench.sh"
build_bench "$build" metaguard_bench_side_by_side
bench="$build/bench/metaguard_bench_side_by_side"
py=("$PYTHON" "$root/bench/side_by_side.py")

mkdir -p "$work"
if [ ! -f "$work/checkpoint/config.json" ]; then
  "${py[@]}" write "$work" "$mib" "$tokens"
fi
results="$work/results-cgroup.jsonl"
: > "$results"
rm -f "$work"/logits-*.safetensors

drop_cache() { sync; echo 1 > /proc/sys/vm/drop_caches; }

cgroups=()
cleanup() {
  local cg
  for cg in ${cgroups[@]+"${cgroups[@]}"}; do
    [ -d "$cg" ] && rmdir "$cg" 2>/dev/null || true
  done
}
trap cleanup EXIT

# Runs one measurement in a fresh process, after dropping the page cache;
# with a cgroup (any label starting "cg-"), inside a new memory cgroup limited
# to limit_mib, whose peak usage (page cache included) joins the JSON line.
record() {
  local label=$1; shift
  local line cg=""
  drop_cache
  if [ "${label#cg-}" != "$label" ]; then
    cg="$parent/metaguard-offload-$$-$label"
    mkdir "$cg"
    cgroups+=("$cg")
    echo $((limit_mib * 1024 * 1024)) > "$cg/memory.limit_in_bytes"
    local status=0
    line=$(sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec timeout "$@"' sh "$cg" "$timeout_s" "$@" \
      2>>"$work/stderr.log" | tail -n 1) || status=$?
    case $status in
      0) ;;
      124) line="{\"failed\": true, \"reason\": \"still running after $timeout_s s\"}" ;;
      137) line='{"failed": true, "reason": "killed (out of memory)"}' ;;
      *) line="{\"failed\": true, \"reason\": \"exit status $status\"}" ;;
    esac
    local peak failcnt
    peak=$(cat "$cg/memory.max_usage_in_bytes")
    failcnt=$(cat "$cg/memory.failcnt")
    rmdir "$cg" 2>/dev/null || true
    line="${line%\}}, \"cgroup_peak\": $peak, \"cgroup_failcnt\": $failcnt}"
  else
    line=$("$@" 2>>"$work/stderr.log" | tail -n 1) || line='{"failed": true}'
  fi
  echo "$label $line" >> "$results"
  echo "$label $line"
}

# Runs "$@" while another process reads the checkpoint with O_DIRECT without
# pause. Where reading costs the compute cores something (a virtual
# machine's disk, shared memory bandwidth), the in-memory forward measured
# this way is the floor no forward that overlaps its reads can beat.
with_disk_busy() {
  (
    while :; do
      for shard in "$work"/checkpoint/*.safetensors; do
        dd if="$shard" of=/dev/null bs=16M iflag=direct 2>/dev/null || exit 0
      done
    done
  ) &
  local reader=$! status=0
  "$@" || status=$?
  pkill -P "$reader" 2>/dev/null || true
  kill "$reader" 2>/dev/null || true
  wait "$reader" 2>/dev/null || true
  return $status
}

echo "memory cgroups under $parent, limit $limit_mib MiB; page cache dropped before every process"
for i in $(seq "$processes"); do
  record memory-metaguard "$bench" forward "$work/checkpoint" - "$work/ids.safetensors" \
    "$work/logits-metaguard-memory.safetensors" "$runs" warm "$threads"
  record memory-metaguard-disk-busy with_disk_busy "$bench" forward "$work/checkpoint" - "$work/ids.safetensors" \
    "$work/logits-metaguard-memory-disk-busy.safetensors" "$runs" warm "$threads"
  record memory-transformers "${py[@]}" forward memory "$work" "$runs" warm "$work/logits-memory-warm.safetensors"
  record read-cold "$bench" read "$work/checkpoint" "$work/device_map.json" "$runs" cold
  for mode in automatic direct cached; do
    record "cg-metaguard-$mode" env METAGUARD_OFFLOAD_READ=$mode "$bench" forward "$work/checkpoint" \
      "$work/device_map.json" "$work/ids.safetensors" "$work/logits-metaguard-$mode.safetensors" "$runs" warm "$threads"
  done
  record cg-transformers "${py[@]}" forward transformers "$work" "$runs" warm "$work/logits-transformers.safetensors"
  record cg-accelerate "${py[@]}" forward accelerate "$work" "$runs" warm "$work/logits-accelerate.safetensors"
done
"${py[@]}" report-cgroup "$results" "$work" "$limit_mib"
