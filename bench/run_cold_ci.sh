#!/usr/bin/env bash
# The fully cold CI figure: a fresh Debian 12 (debootstrap, nothing installed,
# no cache) entered as a chroot, a fresh clone of this repository's HEAD, and
# `CI=true .ci/run` in it, timed; prints the run's stage times and total.
# As root, on a Debian 12 machine with network access to Debian's, PyPI's and
# npm's registries; the machine's own packages and caches are not used.
#
#   bench/run_cold_ci.sh [CHROOT_DIR]     # default /srv/metaguard-cold; ~100 min on 2 cores
#
# The chroot gets the machine's name resolution, CA certificates and pip/npm
# settings (so it reaches the same registries), and /proc, /sys, /dev.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
chroot_dir="${1:-/srv/metaguard-cold}"
# The mirror this machine's apt uses for Debian's main archive, unless named.
mirror="${METAGUARD_DEBIAN_MIRROR:-$(apt-cache policy 2>/dev/null |
  awk '$3 ~ /^[a-z]+\/main$/ && $3 !~ /-(security|updates)\// && $4 == "amd64" { print $2; exit }')}"
[ -n "$mirror" ] || { echo "run_cold_ci: no Debian mirror in apt's sources; set METAGUARD_DEBIAN_MIRROR" >&2; exit 2; }
# What runs in the clone; another command checks the set-up of the chroot.
command="${METAGUARD_COLD_COMMAND:-bash .ci/run}"

[ "$(id -u)" = 0 ] || { echo "run_cold_ci: run as root (debootstrap, chroot, mounts)" >&2; exit 2; }
command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null

release_mounts() {
  umount "$chroot_dir/origin" 2>/dev/null || true
  for m in dev sys proc; do umount -R "$chroot_dir/$m" 2>/dev/null || true; done
}
trap release_mounts EXIT

release_mounts
rm -rf "$chroot_dir"
echo "run_cold_ci: debootstrap bookworm into $chroot_dir"
debootstrap --variant=minbase --include=ca-certificates,git bookworm "$chroot_dir" "$mirror" >/dev/null

# What a machine of the project's kind provides around the system: names,
# certificates and registry settings; copied only where the machine has them.
cp /etc/hosts /etc/resolv.conf "$chroot_dir/etc/"
if [ -d /etc/apt/sources.list.d ] && ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
  cp /etc/apt/sources.list.d/*.sources "$chroot_dir/etc/apt/sources.list.d/"
  rm -f "$chroot_dir/etc/apt/sources.list"
fi
cp /usr/local/share/ca-certificates/*.crt "$chroot_dir/usr/local/share/ca-certificates/" 2>/dev/null || true
for f in /etc/pip.conf /etc/npmrc; do
  if [ -f "$f" ]; then cp "$f" "$chroot_dir/etc/"; fi
done
if [ -f "$HOME/.npmrc" ]; then cp "$HOME/.npmrc" "$chroot_dir/root/"; fi

mount -t proc proc "$chroot_dir/proc"
mount --rbind /sys "$chroot_dir/sys"
mount --rbind /dev "$chroot_dir/dev"
mkdir -p "$chroot_dir/origin"
mount --bind "$root" "$chroot_dir/origin"
mount -o remount,bind,ro "$chroot_dir/origin"
chroot "$chroot_dir" update-ca-certificates >/dev/null 2>&1
chroot "$chroot_dir" git clone -q /origin /root/metaguard
echo "run_cold_ci: fresh clone of $(git -C "$root" rev-parse --short HEAD); CI=true $command"

start=$(date +%s)
status=0
chroot "$chroot_dir" env -i HOME=/root LANG=C.UTF-8 CI=true \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  bash -c "cd /root/metaguard && $command" >"$chroot_dir/root/ci.log" 2>&1 || status=$?
elapsed=$(( $(date +%s) - start ))

grep -E '^(== |[a-z0-9]+: took|majors: SKIPPED|summary:)' "$chroot_dir/root/ci.log" || true
echo "run_cold_ci: exit $status, $elapsed s ($(( elapsed / 60 )) min); log: $chroot_dir/root/ci.log"
exit "$status"
