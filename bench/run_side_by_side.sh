#!/usr/bin/env bash
# Side by side with transformers and accelerate (a benchmark, not a test; not
# run in CI). On one random Llama-style checkpoint written by transformers'
# save_pretrained, with the second half of the decoder layers on "disk":
#   - transformers from_pretrained(device_map, offload_folder), accelerate
#     init_empty_weights + load_checkpoint_and_dispatch, and metaguard's
#     from_pretrained with the same map (bench/bench_side_by_side.cpp), each
#     offloaded forward in fresh processes, page cache warm and cold;
#   - both in-memory forwards and the read of the offloaded bytes alone;
#   - a cold load of the whole checkpoint into memory: metaguard's
#     from_pretrained, transformers' from_pretrained, and an O_DIRECT read of
#     the files (the disk's floor).
# Then bench/side_by_side.py compares every output with transformers' in-memory
# logits and prints medians, peak RSS and ratios.
#
#   bench/run_side_by_side.sh [build_dir] [work_dir] [MiB=1024] [processes=3] [runs=5] [tokens=16]
#
# metaguard's forward also runs "steady": every forward reads its offloaded
# bytes from disk (OffloadOptions::drop_page_cache; the cache dropped once),
# as for a model bigger than memory in a generation loop.
#
# The warm offload overhead is also taken in one process (bench_side_by_side
# overhead: both models, forwards in turns, the median of the differences).
#
# metaguard's cold forward also runs without read-ahead (depth 0) and with a
# deeper one (METAGUARD_DEEP_PREFETCH blocks, default 3; 0 leaves that variant out):
# with the first half of the layers in memory, the reader of a depth-1
# window reads the next forward's first two blocks and then waits through
# their compute with nothing to read.
#
# Cold runs drop the whole page cache (echo 1 > /proc/sys/vm/drop_caches) when
# run as root, else the checkpoint's and offload folders' pages
# (posix_fadvise DONTNEED); the output says which ran. The C++ side is built
# against the LibTorch of $PYTHON's torch, so both sides run the same kernels;
# LIBTORCH=system builds against the LibTorch CMake finds by itself (Debian's
# 1.13) instead. $PYTHON defaults to the pinned environment.
#
# Both sides run with OMP_WAIT_POLICY=PASSIVE: on a machine with more runnable
# threads than cores, OpenMP's spin-waiting threads burn the time slices of
# the thread they wait for (the in-memory forward of the 1 GiB checkpoint took
# 10.3 s spinning, 0.5-1.0 s waiting passively, on a 2-core VM at load average
# 7-10); both sides run the same way.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-/root/.cache/metaguard/python/bin/python}
build=${1:-$root/build-bench-t2}
work=${2:-${TMPDIR:-/tmp}/metaguard-side-by-side}
mib=${3:-1024}
processes=${4:-3}
runs=${5:-5}
tokens=${6:-16}
deep=${METAGUARD_DEEP_PREFETCH:-3}
export OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE TQDM_DISABLE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

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
results="$work/results.jsonl"
: > "$results"
shards=("$work"/checkpoint/*.safetensors)

# Every warm row starts from the same cache: dropped, then filled by one
# sequential read, as a download or a copy leaves it (2 MiB folios). Left as
# the previous row left it, a warm row would inherit that program's folios:
# after Python's mapped reads, 4 KiB ones, which metaguard's per-forward
# mappings pay for page by page (measured in a row of its own below).
warm_cache() { drop_cache; cat "${shards[@]}" > /dev/null; }
drop_cache() {
  sync
  if ! { echo 1 > /proc/sys/vm/drop_caches; } 2>/dev/null; then
    "$PYTHON" -c 'import os, sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "${shards[@]}"
  fi
}
# Runs one measurement in a fresh process and files its JSON line under a
# label; the libraries' messages and progress bars go to stderr.log.
record() {
  local label=$1; shift
  local line
  line=$("$@" 2>>"$work/stderr.log" | tail -n 1)
  echo "$label $line" >> "$results"
  echo "$label $line"
}

# Variants take turns, so that the machine's load falls on all of them alike.
for i in $(seq "$processes"); do
  for mode in warm cold; do
    if [ "$mode" = warm ]; then
      warm_cache
      record forward-metaguard-memory-warm "$bench" forward "$work/checkpoint" - "$work/ids.safetensors" \
        "$work/logits-metaguard-memory-warm.safetensors" "$runs" warm 2
      record py-forward-memory-warm "${py[@]}" forward memory "$work" "$runs" warm \
        "$work/logits-memory-warm.safetensors"
    fi
    [ "$mode" = warm ] && warm_cache
    record "read-$mode" "$bench" read "$work/checkpoint" "$work/device_map.json" "$runs" "$mode"
    [ "$mode" = warm ] && warm_cache
    record "forward-metaguard-$mode" "$bench" forward "$work/checkpoint" "$work/device_map.json" \
      "$work/ids.safetensors" "$work/logits-metaguard-$mode.safetensors" "$runs" "$mode" 2
    if [ "$mode" = cold ]; then
      # A model bigger than memory forward after forward: used pages dropped
      # (drop_page_cache), the cache dropped once, nothing between forwards.
      record forward-metaguard-steady "$bench" forward "$work/checkpoint" "$work/device_map.json" \
        "$work/ids.safetensors" "$work/logits-metaguard-steady.safetensors" "$runs" steady 2
    fi
    if [ "$mode" = warm ]; then
      warm_cache
      record overhead-metaguard-warm "$bench" overhead "$work/checkpoint" "$work/device_map.json" \
        "$work/ids.safetensors" "$((2 * runs))" 2
    else
      record forward-metaguard-cold-depth0 "$bench" forward "$work/checkpoint" "$work/device_map.json" \
        "$work/ids.safetensors" "$work/logits-metaguard-cold-depth0.safetensors" "$runs" cold 2 0
    fi
    if [ "$mode" = cold ] && [ "$deep" -gt 0 ]; then
      record "forward-metaguard-cold-depth$deep" "$bench" forward "$work/checkpoint" "$work/device_map.json" \
        "$work/ids.safetensors" "$work/logits-metaguard-cold-depth$deep.safetensors" "$runs" cold 2 "$deep"
    fi
    [ "$mode" = warm ] && warm_cache
    record "py-forward-transformers-$mode" "${py[@]}" forward transformers "$work" "$runs" "$mode" \
      "$work/logits-transformers-$mode.safetensors"
    if [ "$mode" = cold ]; then
      # Warm on the cache transformers' cold forward leaves (its mapped reads:
      # 4 KiB folios), the pages it did not keep read in once more.
      cat "${shards[@]}" > /dev/null
      record forward-metaguard-warm-after-transformers "$bench" forward "$work/checkpoint" \
        "$work/device_map.json" "$work/ids.safetensors" "$work/logits-metaguard-warm-after-transformers.safetensors" \
        "$runs" warm 2
    fi
    [ "$mode" = warm ] && warm_cache
    record "py-forward-accelerate-$mode" "${py[@]}" forward accelerate "$work" "$runs" "$mode" \
      "$work/logits-accelerate-$mode.safetensors"
  done
  # Loading cold, everything in memory: the page cache dropped before each.
  drop_cache
  record load-metaguard-cold "$bench" load "$work/checkpoint"
  drop_cache
  record py-load-transformers-cold "${py[@]}" load "$work"
  drop_cache
  record direct-cold "$bench" direct "${shards[@]}"
done
"${py[@]}" report "$results" "$work"
