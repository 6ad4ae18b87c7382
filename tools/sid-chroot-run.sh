#!/bin/sh
# Runs a program of the Debian unstable chroot that tools/llvm-sid.sh made
# (e.g. its clang-tidy-23) on files of this machine: binds /proc, /dev, /tmp
# and the given folders into the chroot at the same paths, then runs the
# program there in the caller's working directory.
#
#   unshare --mount --propagation private tools/sid-chroot-run.sh ROOT DIR[:DIR...] PROGRAM [ARG...]
#
# Meant to run in a mount namespace of its own (unshare, as above, which
# needs root): the bind mounts are made in that namespace only and vanish
# with it when the program exits, however it exits, so nothing is left to
# unmount. tools/llvm-sid.sh writes the wrapper that calls it this way.
set -eu
root=$1 binds=$2
shift 2
[ -d "$root/usr/bin" ] || { echo "sid-chroot-run.sh: no chroot at $root" >&2; exit 2; }
mount --rbind /proc "$root/proc"
mount --rbind /dev "$root/dev"
old_ifs=$IFS
IFS=:
set -f
# shellcheck disable=SC2086
set -- /tmp $binds -- "$@"
set +f
IFS=$old_ifs
while [ "$1" != -- ]; do
  if [ -n "$1" ] && [ -d "$1" ]; then
    mkdir -p "$root$1"
    mount --bind "$1" "$root$1"
  fi
  shift
done
shift
exec chroot "$root" /bin/sh -c 'cd "$1" 2>/dev/null || cd /; shift; exec "$@"' sh "$PWD" "$@"
