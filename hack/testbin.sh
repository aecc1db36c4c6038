#!/usr/bin/env bash
# testbin.sh makes sure a real kube-apiserver, kube-controller-manager and
# etcd, built from the Go module in hack/testbin, and kwok (installed from the
# Go module proxy at $kwok_version below) exist on this machine, and prints the
# directory that holds them as the last line of stdout. Progress goes to stderr.
#
# The binaries live outside the repository, in
#   ${XDG_CACHE_HOME:-$HOME/.cache}/haproxy-k8s-sync/testbin/<key>
# where <key> hashes hack/testbin's go.mod, go.sum and *.go files (plus the
# target GOOS/GOARCH and the kwok version). A fresh clone on the same machine reuses the build; any
# change to the module or to the build flags below builds again. Concurrent callers build only once: the
# build for a key runs under flock(1).
#
# Environment:
#   HKS_TESTBIN_CACHE  overrides the cache root (default above).
#   GO                 the go command to use (default: go).
set -euo pipefail

GO=${GO:-go}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src="$root/hack/testbin"
cache_root=${HKS_TESTBIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/haproxy-k8s-sync/testbin}

log() { printf 'testbin: %s\n' "$*" >&2; }

[[ -f "$src/go.mod" ]] || { log "no module at $src"; exit 1; }

# kube-apiserver reports the version of k8s.io/kubernetes from go.mod on
# /version, as a released binary would (unstamped it says v0.0.0-master).
kver=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v[0-9]/ { print $2; exit }' "$src/go.mod")
[[ -n "$kver" ]] || { log "k8s.io/kubernetes not required in $src/go.mod"; exit 1; }
kminor=${kver#v*.}
kminor=${kminor%%.*}
kmajor=${kver#v}
kmajor=${kmajor%%.*}
vpkg=k8s.io/component-base/version
# kwok makes fake Nodes and Pods behave (Ready, terminating) for the
# controller-manager; it is its own module, installed with go install.
kwok_version=v0.8.0

ldflags="-X $vpkg.gitVersion=$kver -X $vpkg.gitMajor=$kmajor -X $vpkg.gitMinor=$kminor -X $vpkg.gitTreeState=clean"

# The key: content of every input file, named by its path relative to the
# module, in a stable order, plus the platform the binaries are built for.
key=$(
	cd "$src"
	{
		find . -type f \( -name go.mod -o -name go.sum -o -name '*.go' \) -print0 |
			LC_ALL=C sort -z | xargs -0 sha256sum
		"$GO" env GOOS GOARCH
		echo "$ldflags"
		echo "kwok $kwok_version"
	} | sha256sum | cut -c1-16
)
dir="$cache_root/$key"

complete() {
	[[ -f "$dir/.complete" && -x "$dir/kube-apiserver" && -x "$dir/etcd" &&
		-x "$dir/kube-controller-manager" && -x "$dir/kwok" ]]
}

build() {
	local tmp=$1
	(cd "$src" && "$GO" build -trimpath -ldflags="$ldflags" -o "$tmp/" \
		./kube-apiserver ./kube-controller-manager ./etcd) >&2
	# Outside the module dir so that hack/testbin's go.mod does not apply.
	(cd "$tmp" && GOBIN="$tmp" GOFLAGS= "$GO" install -trimpath "sigs.k8s.io/kwok/cmd/kwok@$kwok_version") >&2
}

# shellcheck source=lib/cachebuild.sh
. "$root/hack/lib/cachebuild.sh"
cached_build "$dir" complete build "kube-apiserver, kube-controller-manager, etcd and kwok"

echo "$dir"
