#!/usr/bin/env bash
# LLVM majors that Debian 12 does not ship (METAGUARD_SID_LLVM_VERSIONS,
# default 23), from Debian unstable (sid), for tools/run-tests.sh's LLVM-majors
# leg. Sourced by tools/setup.sh. Nothing is installed on this machine and its
# apt sources are left alone; everything lives in the cache folder
# ($METAGUARD_SID_DIR, default $METAGUARD_CACHE_DIR/llvm-sid), so a re-run
# downloads nothing:
#
# - llvm-N/: the major's headers and CMake packages, the Debian packages
#   unpacked with dpkg -x (downloaded with apt-get, with a configuration and
#   state of its own naming sid). The plugin links no LLVM library, so it is
#   built here, with this machine's compiler and C++ library, against them
#   (-DMETAGUARD_LLVM<N>_ROOT=<tree>/usr/lib/llvm-N).
# - chroot/: a minimal Debian unstable (debootstrap --variant=minbase) with
#   clang-tidy-N installed, where the plugin is loaded by a real clang-tidy N.
#   metaguard_sid_clang_tidy writes a wrapper that runs it on this machine's
#   files (tools/sid-chroot-run.sh: bind mounts in a mount namespace of the
#   call's own, gone when it exits).
#
# Both need root (debootstrap, chroot, mount).

METAGUARD_SID_LLVM_VERSIONS="${METAGUARD_SID_LLVM_VERSIONS-23}"
METAGUARD_SID_DIR="${METAGUARD_SID_DIR:-$METAGUARD_CACHE_DIR/llvm-sid}"

# The Debian mirror this machine's apt already uses for its main archive (sid
# lives beside bookworm there), unless METAGUARD_SID_MIRROR names one.
metaguard_sid_mirror() {
  if [ -n "${METAGUARD_SID_MIRROR:-}" ]; then
    echo "$METAGUARD_SID_MIRROR"
    return 0
  fi
  apt-cache policy 2>/dev/null |
    awk '$3 ~ /^[a-z]+\/main$/ && $3 !~ /-(security|updates)\// && $4 == "amd64" { print $2; exit }' |
    grep . || { echo "metaguard: no Debian mirror in this machine's apt sources; set METAGUARD_SID_MIRROR" >&2; return 1; }
}

# Removes the folder $1 unless something is mounted inside it (a bind mount
# of this machine's files left by a chroot, which rm -rf would descend into).
metaguard_sid_remove() {
  if awk -v dir="$1" '$2 == dir || index($2, dir "/") == 1 { found = 1 } END { exit !found }' \
       /proc/self/mounts; then
    echo "metaguard: something is mounted inside $1; not removing it" >&2
    return 1
  fi
  rm -rf "$1"
}

# Whether major $1 comes from sid.
metaguard_is_sid_major() {
  [[ ";$METAGUARD_SID_LLVM_VERSIONS;" == *";$1;"* ]]
}

# apt-get/apt-cache options for a private apt naming sid alone, state in $1.
# The machine's apt.conf.d still applies (proxies, mirror settings).
metaguard_sid_apt() {
  local state=$1
  shift
  mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/sources.list.d"
  [ -f "$state/status" ] || : >"$state/status"
  local mirror
  mirror=$(metaguard_sid_mirror) || return 1
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror sid main" \
    >"$state/sources.list"
  apt-get -q -o Dir::Etc::sourcelist="$state/sources.list" \
    -o Dir::Etc::sourceparts="$state/sources.list.d" -o Dir::State::Lists="$state/lists" \
    -o Dir::Cache="$state/cache" -o Dir::State::status="$state/status" \
    -o APT::Architecture=amd64 -o APT::Architectures=amd64 -o APT::Sandbox::User=root "$@"
}

# The headers and CMake packages of LLVM major $1 from sid, unpacked (once)
# into $METAGUARD_SID_DIR/llvm-$1; prints the LLVM folder (its usr/lib/llvm-N).
# The packages: clang-tidy's and Clang's headers (libclang-N-dev), LLVM's
# (llvm-N-dev), ClangConfig.cmake (clang-N), and the shared libraries and
# plugins that LLVM's and Clang's CMake packages insist exist (libllvmN,
# libclang-cppN, libclang1-N, llvm-N-linker-tools); the static libraries come
# with the -dev packages. About 140 MB to download, 1 GB unpacked.
metaguard_sid_llvm_root() {
  local major=$1 tree="$METAGUARD_SID_DIR/llvm-$1" tmp deb
  if [ ! -f "$tree/.metaguard-stamp" ]; then
    tmp="$tree.tmp"
    rm -rf "$tmp" && mkdir -p "$tmp/debs" "$tmp/root" || return 1
    echo "metaguard: downloading LLVM $major's headers and CMake packages from Debian unstable" >&2
    metaguard_sid_apt "$tmp/apt" update >&2 || return 1
    (cd "$tmp/debs" &&
       metaguard_sid_apt "$tmp/apt" download "llvm-$major-dev" "libclang-$major-dev" "clang-$major" \
         "libllvm$major" "libclang-cpp$major" "libclang1-$major" "llvm-$major-linker-tools" >&2) ||
      return 1
    for deb in "$tmp"/debs/*.deb; do
      dpkg -x "$deb" "$tmp/root" || return 1
      dpkg-deb --showformat='${Package} ${Version}\n' -W "$deb" >>"$tmp/root/.metaguard-stamp"
    done
    rm -rf "$tree" && mv "$tmp/root" "$tree" && rm -rf "$tmp" || return 1
  fi
  [ -f "$tree/usr/lib/llvm-$major/lib/cmake/llvm/LLVMConfig.cmake" ] ||
    { echo "metaguard: no LLVMConfig.cmake in $tree" >&2; return 1; }
  echo "$tree/usr/lib/llvm-$major"
}

# The Debian unstable chroot ($METAGUARD_SID_DIR/chroot), made once, with
# clang-tidy-$1 installed (once per major; an install cut short is finished
# by the next run, which finds no stamp).
metaguard_sid_chroot() {
  local major=$1 root="$METAGUARD_SID_DIR/chroot"
  if [ ! -f "$root/.metaguard-base" ]; then
    command -v debootstrap >/dev/null || { echo "metaguard: debootstrap is not installed" >&2; return 1; }
    local mirror
    mirror=$(metaguard_sid_mirror) || return 1
    echo "metaguard: making a Debian unstable chroot in $root (debootstrap)" >&2
    metaguard_sid_remove "$root.tmp" && mkdir -p "$root.tmp" || return 1
    # In a mount namespace of its own: whatever debootstrap mounts inside the
    # chroot goes away with it, even when it fails half-way.
    unshare --mount --propagation private \
      debootstrap --variant=minbase sid "$root.tmp" "$mirror" >&2 || return 1
    # This machine's apt settings for the mirror (e.g. a mirror whose Release
    # files are past their Valid-Until, a proxy) apply inside too.
    apt-config dump | grep -E '^Acquire::(Check-Valid-Until|Check-Date|https?::Proxy)' \
      >"$root.tmp/etc/apt/apt.conf.d/99metaguard-host" || true
    : >"$root.tmp/.metaguard-base"
    metaguard_sid_remove "$root" && mv "$root.tmp" "$root" || return 1
  fi
  if [ ! -f "$root/.metaguard-clang-tidy-$major" ]; then
    echo "metaguard: installing clang-tidy-$major in $root" >&2
    unshare --mount --propagation private sh -c '
      root=$1 major=$2
      mount --rbind /proc "$root/proc" && mount --rbind /dev "$root/dev" &&
      chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
        sh -c "dpkg --configure -a && apt-get update -qq &&
               apt-get install -y -qq --no-install-recommends clang-tidy-$major >/dev/null && apt-get clean"
    ' sh "$root" "$major" >&2 || return 1
    chroot "$root" dpkg-query -W "clang-tidy-$major" >"$root/.metaguard-clang-tidy-$major" || return 1
  fi
}

# Writes $2, an executable that runs the chroot's clang-tidy-$1 on this
# machine's files: the source tree, the build folder (and /tmp) are bound
# into the chroot at the same paths, in a mount namespace of each call's own.
metaguard_sid_clang_tidy() {
  local major=$1 out=$2 binds
  binds=$(printf '%s\n' "$METAGUARD_ROOT" "$METAGUARD_BUILD_DIR" | sort -u | paste -sd:)
  mkdir -p "$(dirname "$out")" || return 1
  cat >"$out" <<EOF
#!/bin/sh
# clang-tidy-$major of Debian unstable, in $METAGUARD_SID_DIR/chroot
# (written by tools/llvm-sid.sh).
exec unshare --mount --propagation private "$METAGUARD_ROOT/tools/sid-chroot-run.sh" \\
  "$METAGUARD_SID_DIR/chroot" "$binds" clang-tidy-$major "\$@"
EOF
  chmod +x "$out"
}

# Everything major $1 needs: the headers, the chroot and the wrapper
# ($METAGUARD_BUILD_DIR/sid/clang-tidy-$1). Exports METAGUARD_LLVM<N>_ROOT and
# METAGUARD_LLVM<N>_CLANG_TIDY, which metaguard_build passes to CMake.
metaguard_sid_prepare() {
  local major=$1 llvm_root wrapper="$METAGUARD_BUILD_DIR/sid/clang-tidy-$1"
  if [ "$(id -u)" -ne 0 ]; then
    echo "metaguard: LLVM $major comes from a Debian unstable chroot, which needs root" >&2
    return 1
  fi
  llvm_root=$(metaguard_sid_llvm_root "$major") &&
    metaguard_sid_chroot "$major" &&
    metaguard_sid_clang_tidy "$major" "$wrapper" || return 1
  echo "metaguard: LLVM $major: headers $(grep "^libclang-$major-dev " "$METAGUARD_SID_DIR/llvm-$major/.metaguard-stamp" | cut -d' ' -f2)," \
       "chroot's $(cut -f1,2 "$METAGUARD_SID_DIR/chroot/.metaguard-clang-tidy-$major" | tr '\t' ' ')" >&2
  export "METAGUARD_LLVM${major}_ROOT=$llvm_root" "METAGUARD_LLVM${major}_CLANG_TIDY=$wrapper"
}
