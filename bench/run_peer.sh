#!/usr/bin/env bash
# Peer benchmark: metaguard's from_pretrained against torch::save/torch::load
# (+ ->to(bf16)) for stock torch::nn and tensor_options() models, zero-copy and
# converting, single-file and sharded, in fresh processes (one load per
# process, spaced apart) and back to back in one process. Prints medians,
# spread, peak RSS, ratios and a bit-identity check. Not for CI.
#
#   bench/run_peer.sh [build-dir] [MiB=512] [runs=3] [gap-seconds=3]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-bench}
mib=${2:-512}
runs=${3:-3}
gap=${4:-3}
. "$root/bench/build_bench.sh"
build_bench "$build" metaguard_bench_peer
work=$(mktemp -d "${TMPDIR:-/tmp}/metaguard-bench-peer-XXXXXX")
trap 'rm -rf "$work"' EXIT
bench="$build/bench/metaguard_bench_peer"
"$bench" generate "$work" "$mib"
"$bench" fresh "$work" "$runs" "$gap"
"$bench" b2b "$work" "$runs"
