#!/usr/bin/env bash
# tools.sh makes sure the helm and kustomize binaries pinned by the
# test-only module hack/tools (its `tool` directives) exist on this machine,
# and prints the directory holding them as the last line of stdout. The tests
# of the Helm chart and of the kustomize bases use them (HKS_TOOLS_DIR).
#
# Like hack/testbin.sh: built from the Go module proxy into
#   ${XDG_CACHE_HOME:-$HOME/.cache}/haproxy-k8s-sync/tools/<key>
# where <key> hashes hack/tools/go.mod and go.sum (plus GOOS/GOARCH), under
# flock(1) so concurrent callers build once. The main module never depends
# on Helm or kustomize.
#
# Environment: HKS_TOOLS_CACHE overrides the cache root; GO the go command.
set -euo pipefail

GO=${GO:-go}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src="$root/hack/tools"
cache_root=${HKS_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/haproxy-k8s-sync/tools}

log() { printf 'tools: %s\n' "$*" >&2; }

key=$(
	cd "$src"
	{
		sha256sum go.mod go.sum
		"$GO" env GOOS GOARCH
	} | sha256sum | cut -c1-16
)
dir="$cache_root/$key"

complete() {
	[[ -f "$dir/.complete" && -x "$dir/helm" && -x "$dir/kustomize" ]]
}

build() {
	(cd "$src" && "$GO" build -trimpath -o "$1/" helm.sh/helm/v3/cmd/helm sigs.k8s.io/kustomize/kustomize/v5) >&2
}

# shellcheck source=lib/cachebuild.sh
. "$root/hack/lib/cachebuild.sh"
cached_build "$dir" complete build "helm and kustomize"

echo "$dir"
