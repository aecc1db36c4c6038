#!/usr/bin/env bash
# haproxy-version.sh makes sure an HAProxy of the given version exists on
# this machine and prints, as the last line of stdout, the path of an
# executable `haproxy` that runs it (tests read it from HAPROXY_BIN).
# Progress goes to stderr.
#
#   hack/haproxy-version.sh 2.6   # the host's own haproxy (Debian bookworm's)
#   hack/haproxy-version.sh 3.0   # Debian trixie's haproxy package
#   hack/haproxy-version.sh 3.2   # Debian unstable's (sid) haproxy package
#   hack/haproxy-version.sh 3.4   # Debian experimental's haproxy package
#
# A version the host does not have comes from Debian's archive by package
# name: debootstrap(8) makes a minimal root file system of the Debian
# release that has it (trixie: 3.0; sid: 3.2, 3.2.26 on 2026-11-28; sid
# moves, so the cached root keeps the version it was made with, and a new
# sid haproxy of another branch makes this script refuse it, by the check
# at the end, until the case below says so), with the haproxy package installed,
# for 3.4 from experimental (a sid root whose apt also reads experimental,
# where haproxy is installed from by name: 3.4.7-1 on 2026-11-28),
# from the same mirror apt on this machine uses (read from apt's own
# configuration, `apt-get indextargets`; HKS_DEBIAN_MIRROR overrides it).
# The binary needs that release's C library, so the printed `haproxy` is a
# small script that runs it through the root file system's own dynamic
# loader and libraries, with no chroot: paths on the command line and in
# the configuration (sockets, config files, certificates) stay the host's.
# It passes itself as argv[0] (ld.so --argv0), because the master process
# re-executes argv[0] (at start and on every reload).
#
# Cached like hack/testbin.sh's builds, in
#   ${XDG_CACHE_HOME:-$HOME/.cache}/haproxy-k8s-sync/haproxy/<version>-<key>/
# where <key> hashes the recipe (release, packages, architecture), made
# under flock(1) so concurrent callers build once. About 4 minutes and
# 230 MB on a cold cache (measured: 3 min 28 s on this project's 2-core
# machine, mostly downloading), then instant. The cached root file system
# keeps the package version it was made with; delete the directory to get
# the release's newest.
#
# Needs root (debootstrap; sudo is used when not root), debootstrap and
# debian-archive-keyring (`make deps` installs both).
#
# Environment:
#   HKS_HAPROXY_CACHE  overrides the cache root (default above).
#   HKS_DEBIAN_MIRROR  the Debian mirror to use instead of apt's.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache_root=${HKS_HAPROXY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/haproxy-k8s-sync/haproxy}

log() { printf 'haproxy-version: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

version=${1:-}
[[ $# -eq 1 && -n "$version" ]] || die "usage: $0 VERSION (2.6: the host's haproxy; 3.0: Debian trixie's; 3.2: Debian sid's; 3.4: Debian experimental's)"

# host_version BIN: the major.minor of an haproxy binary (2.6, 3.0, ...).
host_version() {
	"$1" -v 2>/dev/null | sed -n 's/^HA-\{0,1\}Proxy version \([0-9]*\.[0-9]*\).*/\1/p' | head -n 1
}

# What each version is made of: the Debian release whose haproxy package
# has it (extra: a suite apt in that root also reads, haproxy's source).
extra=
case $version in
2.6)
	# Debian bookworm's, installed on the host by `make deps`.
	bin=$(command -v haproxy || true)
	[[ -n "$bin" ]] || bin=/usr/sbin/haproxy
	[[ -x "$bin" ]] || die "no haproxy on this machine: run make deps"
	got=$(host_version "$bin")
	[[ "$got" == "$version" ]] || die "$bin is HAProxy $got, not $version"
	echo "$bin"
	exit 0
	;;
3.0) suite=trixie ;;
3.2) suite=sid ;;
3.4)
	# Only experimental has 3.4; it builds against sid's libraries.
	suite=sid
	extra=experimental
	;;
*) die "unknown version $version (known: 2.6, 3.0, 3.2, 3.4)" ;;
esac

arch=$(dpkg --print-architecture)
packages=haproxy
# The recipe: what the root file system is made of. Changing it (or this
# list) makes a new cache entry; the mirror is not part of it.
recipe=$(printf 'recipe 1\nsuite %s\nvariant minbase\npackages %s\narch %s\n' "$suite" "$packages" "$arch")
[[ -z "$extra" ]] || recipe+=$(printf '\nfrom %s\n' "$extra")
key=$(printf '%s\n' "$recipe" | sha256sum | cut -c1-16)
dir="$cache_root/$version-$key"
wrapper="$dir/bin/haproxy"

# archive_uri: the first release suite of Debian's own archive that apt's
# package lists name (empty when they name none).
archive_uri() {
	apt-get indextargets --format '$(TARGET_OF) $(LABEL) $(RELEASE) $(REPO_URI)' 2>/dev/null |
		awk '$1 == "deb" && $2 == "Debian" && $3 !~ /-/ && uri == "" { uri = $4 } END { print uri }'
}

# mirror: the URI of the Debian archive apt uses here (a release of
# Debian's own, not its security or updates suites), from apt's
# configuration.
mirror() {
	if [[ -n "${HKS_DEBIAN_MIRROR:-}" ]]; then
		echo "$HKS_DEBIAN_MIRROR"
		return
	fi
	local uri
	uri=$(archive_uri)
	if [[ -z "$uri" ]]; then
		# A machine whose package lists were never fetched knows no labels
		# yet: fetch them once, as `make deps` does before an install.
		log "apt's package lists name no Debian archive yet: apt-get update"
		local sudo=
		[[ "$(id -u)" == 0 ]] || sudo=sudo
		$sudo apt-get update >&2 || true
		uri=$(archive_uri)
	fi
	[[ -n "$uri" ]] || die "no Debian archive in apt's sources (apt-get indextargets; run apt-get update, or set HKS_DEBIAN_MIRROR)"
	echo "${uri%/}"
}

complete() {
	[[ -f "$dir/.complete" && -x "$wrapper" ]]
}

# remove_tree DIR: removes a root file system that debootstrap may have
# left with file systems mounted inside (proc, sys, a bind of the host's
# /dev when killed): unmounted first, and rm never crosses into another
# file system.
remove_tree() {
	local dir=$1 m
	[[ -e "$dir" ]] || return 0
	# Deepest first: /proc/mounts lists parents before their children.
	while read -r m; do
		$sudo umount -l "$m" 2>/dev/null || true
	done < <(awk -v d="$dir/" 'index($2 "/", d) == 1 { print $2 }' /proc/mounts | tac)
	$sudo rm -rf --one-file-system "$dir"
}

sudo=
[[ "$(id -u)" == 0 ]] || sudo=sudo

# from_extra ROOT MIRROR: installs haproxy in ROOT from the suite $extra
# of MIRROR, by name, with the root's own apt (chroot; /proc mounted for
# dpkg meanwhile, and no service started: policy-rc.d). Debian's
# experimental and sid Release files carry a Valid-Until that this
# mirror's copies had passed (2026-11-28), so apt is told not to check it.
from_extra() {
	local r=$1 m=$2
	log "installing $packages from $extra"
	$sudo sh -c "echo 'deb $m $extra main' >'$r/etc/apt/sources.list.d/$extra.list'"
	$sudo sh -c "printf '#!/bin/sh\nexit 101\n' >'$r/usr/sbin/policy-rc.d' && chmod +x '$r/usr/sbin/policy-rc.d'"
	$sudo mount -t proc proc "$r/proc"
	local ok=0
	$sudo env PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive chroot "$r" sh -c \
		"apt-get -o Acquire::Check-Valid-Until=false update && apt-get -o Acquire::Check-Valid-Until=false install -y --no-install-recommends -t $extra $packages" \
		>"$r/../extra.log" 2>&1 || ok=$?
	$sudo umount "$r/proc" || $sudo umount -l "$r/proc"
	$sudo rm -f "$r/usr/sbin/policy-rc.d"
	if [[ $ok != 0 ]]; then
		tail -n 30 "$r/../extra.log" >&2
		die "installing $packages from $extra failed (log above)"
	fi
}

# build TMP: the root file system in TMP/root and the wrapper in TMP/bin,
# written for its final place, $dir.
build() {
	local tmp=$1 m
	# Replaces cached_build's cleanup, for the mounts.
	# shellcheck disable=SC2064 # expanded now: tmp is local
	trap "remove_tree '$tmp'" EXIT
	m=$(mirror)
	command -v debootstrap >/dev/null 2>&1 || [[ -x /usr/sbin/debootstrap ]] || die "debootstrap not installed: run make deps"
	log "debootstrap $suite ($packages) from $m"
	# Its progress goes to a log file, shown only when it fails.
	if ! $sudo env PATH="$PATH:/usr/sbin:/sbin" debootstrap --variant=minbase --include="$packages" \
		"$suite" "$tmp/root" "$m" >"$tmp/debootstrap.log" 2>&1; then
		tail -n 30 "$tmp/debootstrap.log" >&2
		die "debootstrap failed (log above)"
	fi
	[[ -z "$extra" ]] || from_extra "$tmp/root" "$m"
	# Leave the root file system readable by the user who asked for it.
	[[ -z "$sudo" ]] || $sudo chown -R "$(id -u):$(id -g)" "$tmp/root"
	local libdir
	libdir=$(cd "$tmp/root" && ls -d usr/lib/*-linux-gnu | head -n 1)
	local loader
	loader=$(cd "$tmp/root" && ls "$libdir"/ld-linux*.so.* | head -n 1)
	[[ -n "$libdir" && -n "$loader" && -x "$tmp/root/usr/sbin/haproxy" ]] || die "no haproxy, loader or libraries in the $suite root file system"
	mkdir -p "$tmp/bin"
	cat >"$tmp/bin/haproxy" <<EOF
#!/bin/sh
# HAProxy $version (Debian $suite's package) from its own root file system
# $dir/root, run by that system's loader
# with its libraries; made by hack/haproxy-version.sh.
exec "$dir/root/$loader" --library-path "$dir/root/$libdir" --argv0 "$dir/bin/haproxy" "$dir/root/usr/sbin/haproxy" "\$@"
EOF
	chmod +x "$tmp/bin/haproxy"
	# Check it where it will live: the wrapper names $dir.
	got=$("$tmp/root/$loader" --library-path "$tmp/root/$libdir" "$tmp/root/usr/sbin/haproxy" -v | head -n 1)
	log "made: $got"
}

# shellcheck source=lib/cachebuild.sh
. "$root/hack/lib/cachebuild.sh"
cached_build "$dir" complete build "HAProxy $version (Debian $suite)"

got=$(host_version "$wrapper")
[[ "$got" == "$version" ]] || die "$wrapper runs HAProxy $got, not $version"
echo "$wrapper"
