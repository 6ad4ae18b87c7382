#!/usr/bin/env bash
# Builds and runs the offload benchmark. Usage:
#   bench/run_offload.sh [cold] [build_dir] [work_dir] [hidden] [blocks] [runs] [tokens]
#   bench/run_offload.sh --cgroup MiB [build_dir] [work_dir] [model MiB=1024] [processes=3] [runs=3] [tokens=16]
# The work dir holds the ~1 GiB offload folder; put it on the disk you want to
# measure (the default is under /tmp). Results go to stdout. "cold" drops the
# page cache before every run of the read-ahead measurements: all of it
# (echo 1 > /proc/sys/vm/drop_caches) when run as root, else the offload
# files' pages (posix_fadvise DONTNEED); the output says which ran.
#
# --cgroup MiB: disk offload under a memory cap, side by side. As root with
# the cgroup v1 memory controller at /sys/fs/cgroup/memory, each offloaded
# variant runs in a fresh process inside a memory cgroup of its own limited
# to MiB (page cache included), created under the caller's own memory cgroup
# (so any limit above still applies) and removed afterwards; the page cache
# is dropped (echo 1 > /proc/sys/vm/drop_caches) before every process. On the
# Llama checkpoint of bench/side_by_side.py (second half of the layers on
# "disk"), with the same map, threads and ids: metaguard's from_pretrained
# with OffloadReadMode automatic, direct and cached (METAGUARD_OFFLOAD_READ),
# transformers' from_pretrained(device_map, offload_folder) and accelerate's
# load_checkpoint_and_dispatch. Outside any cgroup: the in-memory forward (the
# compute), the same while another process reads the checkpoint with
# O_DIRECT without pause (what reading costs the compute on this machine)
# and a cold pread of the offloaded bytes (the read). Prints the logits
# against transformers in memory, medians, peak RSS and the cgroup's peak
# (page cache included), and the ratios forward / max(compute, cold read),
# forward / max(compute while reading, cold read) and metaguard /
# transformers. Pick MiB below the offloaded bytes plus
# what a process holds anyway (~0.5 GiB for Python with torch), so that the
# page cache cannot keep the offloaded layers. Without root or the
# controller it says so and skips. The C++ side is built against the
# LibTorch of $PYTHON's torch as in bench/run_side_by_side.sh (LIBTORCH=system:
# the one CMake finds). Take figures on a quiet machine only.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = --cgroup ]; then
  shift
  exec "$root/bench/run_offload_cgroup.sh" "$@"
fi
mode=()
if [ "${1:-}" = cold ]; then
  mode=(--cold)
  shift
fi
build=${1:-$root/build-bench}
. "$root/bench/build_bench.sh"
build_bench "$build" metaguard_bench_offload
shift $(( $# > 0 ? 1 : 0 ))
exec "$build/bench/metaguard_bench_offload" ${mode[@]+"${mode[@]}"} "$@"
