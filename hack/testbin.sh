#!/usr/bin/env bash
# testbin.sh makes sure the real Kubernetes binaries the tests run exist on
# this machine, builds the missing ones, and prints a directory holding all
# the requested ones as the last line of stdout (tests read it from
# HKS_TESTBIN_DIR). Progress goes to stderr.
#
#   hack/testbin.sh                      # everything (make test)
#   hack/testbin.sh kube-apiserver etcd  # only these (make demo)
#
# What it knows (default: all):
#   kube-apiserver, kube-controller-manager, kubelet, kube-proxy
#       mains in hack/testbin calling k8s.io/kubernetes/cmd/<name>/app, all
#       from the one k8s.io/kubernetes version hack/testbin/go.mod requires;
#   etcd      go.etcd.io/etcd/server/v3's etcdmain;
#   agnhost   Kubernetes' e2e test server (netexec, pause), from the same module;
#   kwok      installed from the Go module proxy at $kwok_version below;
#   test-images.tar
#       the real-node tier's container images (agnhost and the pause sandbox),
#       packaged by hack/image/testimage from agnhost;
#   echo-basic, coredns
#       the Gateway API conformance suite's backends, from the module in
#       hack/conformance (echo-basic: sigs.k8s.io/gateway-api/conformance's
#       own command; coredns: CoreDNS with the plugins the suite configures);
#   conformance-images.tar
#       both packaged by hack/image/testimage under the image names the
#       suite's manifests use (registry.k8s.io/...; never pulled).
#   controller-images.tar
#       the image the chart runs in the real-node tier,
#       testimages.invalid/haproxy-k8s-sync:1: this checkout's controller,
#       built static (CGO_ENABLED=0), over the HAProxy 3.0 root file system
#       hack/haproxy-version.sh 3.0 makes (which it runs, building that
#       root on a cold cache), packaged by hack/image/testimage. Keyed by
#       the controller's sources (go.mod, go.sum, the non-test .go files of
#       cmd/ and internal/ but internal/testing), the root's cache
#       directory (its recipe's key) and hack/image/testimage; 157 MB,
#       a new one for each change of those sources (a static link and 7 s
#       of packing), of which the newest 3 are kept.
#
# Each one is cached on its own, in
#   ${XDG_CACHE_HOME:-$HOME/.cache}/haproxy-k8s-sync/testbin/bin/<name>/<key>/
# where <key> hashes what it is made of: hack/testbin's go.mod and go.sum, the
# files of its main package, the build flags and the target platform (kwok: its
# version; the images: agnhost's key, hack/image/testimage and the
# hack/image/internal/scratch it builds on). So adding a binary does not
# rebuild the others, and a fresh clone on the same machine reuses them. The printed directory, testbin/sets/<hash>/, holds symbolic links
# to the requested ones. Missing binaries are built together, in one `go build`
# (they share most packages), under flock(1): concurrent callers build once.
#
# Environment:
#   HKS_TESTBIN_CACHE  overrides the cache root (default above).
#   GO                 the go command to use (default: go).
set -euo pipefail

GO=${GO:-go}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src="$root/hack/testbin"
imgsrc="$root/hack/image"
confsrc="$root/hack/conformance"
cache_root=${HKS_TESTBIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/haproxy-k8s-sync/testbin}

log() { printf 'testbin: %s\n' "$*" >&2; }
# shellcheck source=lib/cachebuild.sh
. "$root/hack/lib/cachebuild.sh"

[[ -f "$src/go.mod" ]] || { log "no module at $src"; exit 1; }

gobins=(kube-apiserver kube-controller-manager kubelet kube-proxy etcd agnhost)
confbins=(echo-basic coredns)
all=("${gobins[@]}" kwok test-images.tar "${confbins[@]}" conformance-images.tar controller-images.tar)

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

requested=("$@")
[[ ${#requested[@]} -gt 0 ]] || requested=("${all[@]}")
for r in "${requested[@]}"; do
	[[ " ${all[*]} " == *" $r "* ]] || { log "unknown binary $r (known: ${all[*]})"; exit 2; }
done
want() { [[ " ${requested[*]} " == *" $1 "* ]]; }
# The images need agnhost.
if want test-images.tar && ! want agnhost; then requested+=(agnhost); fi
if want conformance-images.tar; then
	want echo-basic || requested+=(echo-basic)
	want coredns || requested+=(coredns)
fi

platform=$("$GO" env GOOS GOARCH GOVERSION)

# hashfiles DIR PATTERN...: sha256sum of DIR's files matching the name
# patterns, named relative to DIR, in a stable order.
hashfiles() {
	local dir=$1
	shift
	local expr=() p
	for p in "$@"; do
		[[ ${#expr[@]} -eq 0 ]] || expr+=(-o)
		expr+=(-name "$p")
	done
	(cd "$dir" && find . -maxdepth 1 -type f \( "${expr[@]}" \) -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum)
}

declare -A key
modkey=$(hashfiles "$src" go.mod go.sum)
for b in "${gobins[@]}"; do
	key[$b]=$({
		echo "$modkey"
		hashfiles "$src/$b" '*.go'
		echo "$platform"
		echo "$ldflags"
	} | sha256sum | cut -c1-16)
done
key[kwok]=$(printf '%s\n%s\n' "kwok $kwok_version" "$platform" | sha256sum | cut -c1-16)
# What both image tarballs are packed with: hack/image/testimage.
imgkey=$({
	hashfiles "$imgsrc" go.mod go.sum
	hashfiles "$imgsrc/testimage" '*.go'
	hashfiles "$imgsrc/internal/scratch" '*.go'
})
key[test-images.tar]=$(printf '%s\n%s\n' "${key[agnhost]}" "$imgkey" | sha256sum | cut -c1-16)

confkey=$(hashfiles "$confsrc" go.mod go.sum)
for b in "${confbins[@]}"; do
	key[$b]=$({
		echo "$confkey $b"
		[[ $b != coredns ]] || hashfiles "$confsrc/coredns" '*.go'
		echo "$platform"
	} | sha256sum | cut -c1-16)
done
key[conformance-images.tar]=$(printf '%s\n%s\n' "${key[echo-basic]} ${key[coredns]}" "$imgkey" | sha256sum | cut -c1-16)

if want controller-images.tar; then
	haproxy_dir=$("$root/hack/haproxy-version.sh" 3.0 | tail -n 1)
	haproxy_dir=$(dirname "$(dirname "$haproxy_dir")") # .../haproxy/3.0-<key>
	[[ -x "$haproxy_dir/root/usr/sbin/haproxy" ]] || { log "no HAProxy root file system in $haproxy_dir"; exit 1; }
	key[controller-images.tar]=$({
		hashfiles "$root" go.mod go.sum
		(cd "$root" && find cmd internal -path internal/testing -prune -o -type f -name '*.go' ! -name '*_test.go' -print0 |
			LC_ALL=C sort -z | xargs -0 sha256sum)
		basename "$haproxy_dir"
		echo "$platform"
		echo "$imgkey"
	} | sha256sum | cut -c1-16)
fi

path() { echo "$cache_root/bin/$1/${key[$1]}"; }
have() { [[ -f "$(path "$1")/.complete" && -e "$(path "$1")/$1" ]]; }
missing() {
	local r
	for r in "${requested[@]}"; do have "$r" || echo "$r"; done
}

# install NAME FILE: moves a built FILE into NAME's cache directory.
install_one() {
	local name=$1 file=$2 dir
	dir=$(path "$name")
	mkdir -p "$(dirname "$dir")"
	rm -rf "$dir.new"
	mkdir -p "$dir.new"
	mv "$file" "$dir.new/$name"
	touch "$dir.new/.complete"
	rm -rf "$dir"
	mv "$dir.new" "$dir"
}

build_missing() {
	local todo=("$@") gopkgs=() b tmp start=$SECONDS
	tmp=$(mktemp -d "$cache_root/.build.XXXXXX")
	# shellcheck disable=SC2064 # expanded now
	trap "rm -rf '$tmp'" EXIT
	log "building ${todo[*]} (minutes on a cold cache; the binaries share most packages)"
	for b in "${todo[@]}"; do
		[[ " ${gobins[*]} " == *" $b "* ]] && gopkgs+=("./$b")
	done
	if [[ ${#gopkgs[@]} -gt 0 ]]; then
		# agnhost runs in an image with nothing else in it: static, built on
		# its own (CGO_ENABLED changes the build of every package above net,
		# so the others keep the default and share the Go build cache).
		local static=()
		if [[ " ${gopkgs[*]} " == *" ./agnhost "* ]]; then
			static=(./agnhost)
			gopkgs=("${gopkgs[@]/.\/agnhost/}")
			(cd "$src" && CGO_ENABLED=0 "$GO" build -trimpath -o "$tmp/" "${static[@]}") >&2
		fi
		local p rest=()
		for p in "${gopkgs[@]}"; do [[ -n "$p" ]] && rest+=("$p"); done
		if [[ ${#rest[@]} -gt 0 ]]; then
			(cd "$src" && "$GO" build -trimpath -ldflags="$ldflags" -o "$tmp/" "${rest[@]}") >&2
		fi
		for b in "${todo[@]}"; do
			[[ " ${gobins[*]} " == *" $b "* ]] && install_one "$b" "$tmp/$b"
		done
	fi
	if [[ " ${todo[*]} " == *" kwok "* ]]; then
		# Outside the module dir so that hack/testbin's go.mod does not apply.
		(cd "$tmp" && GOBIN="$tmp" GOFLAGS= "$GO" install -trimpath "sigs.k8s.io/kwok/cmd/kwok@$kwok_version") >&2
		install_one kwok "$tmp/kwok"
	fi
	local conf=()
	for b in "${confbins[@]}"; do
		[[ " ${todo[*]} " == *" $b "* ]] && conf+=("$b")
	done
	if [[ ${#conf[@]} -gt 0 ]]; then
		# Static: each runs alone in a scratch image.
		local cpkgs=()
		for b in "${conf[@]}"; do
			case $b in
			echo-basic) cpkgs+=(sigs.k8s.io/gateway-api/conformance/echo-basic) ;;
			coredns) cpkgs+=(./coredns) ;;
			esac
		done
		(cd "$confsrc" && CGO_ENABLED=0 "$GO" build -trimpath -o "$tmp/" "${cpkgs[@]}") >&2
		for b in "${conf[@]}"; do install_one "$b" "$tmp/$b"; done
	fi
	if [[ " ${todo[*]} " == *" conformance-images.tar "* ]]; then
		(cd "$imgsrc" && "$GO" build -o "$tmp/testimage" ./testimage) >&2
		"$tmp/testimage" -echo-basic "$(path echo-basic)/echo-basic" -coredns "$(path coredns)/coredns" -o "$tmp/conformance-images.tar" >&2
		install_one conformance-images.tar "$tmp/conformance-images.tar"
	fi
	if [[ " ${todo[*]} " == *" controller-images.tar "* ]]; then
		(cd "$root" && CGO_ENABLED=0 "$GO" build -trimpath -o "$tmp/haproxy-k8s-sync" ./cmd/haproxy-k8s-sync) >&2
		(cd "$imgsrc" && "$GO" build -o "$tmp/testimage" ./testimage) >&2
		"$tmp/testimage" -controller "$tmp/haproxy-k8s-sync" -haproxy-root "$haproxy_dir/root" -o "$tmp/controller-images.tar" >&2
		install_one controller-images.tar "$tmp/controller-images.tar"
		# One per source change: keep the newest 3 (a set naming an older
		# one is never reused, its key would be rebuilt first), and any
		# used in the last 2 hours (below: a set printed touches its
		# own): another checkout's make test may be running with it, and
		# lost it mid-run when this kept only the newest 3.
		(cd "$cache_root/bin/controller-images.tar" && ls -1t | tail -n +4 |
			while read -r d; do [[ -n $(find "$d" -maxdepth 0 -mmin +120) ]] && rm -rf -- "$d"; done) || true
	fi
	if [[ " ${todo[*]} " == *" test-images.tar "* ]]; then
		(cd "$imgsrc" && "$GO" build -o "$tmp/testimage" ./testimage) >&2
		"$tmp/testimage" -agnhost "$(path agnhost)/agnhost" -o "$tmp/test-images.tar" >&2
		install_one test-images.tar "$tmp/test-images.tar"
	fi
	rm -rf "$tmp"
	trap - EXIT
	log "built ${todo[*]} in $((SECONDS - start))s"
}

mkdir -p "$cache_root"
mapfile -t todo < <(missing)
if [[ ${#todo[@]} -gt 0 ]]; then
	build_lock "$cache_root/.lock" "into $cache_root"
	# Someone else may have built some of them while we waited.
	mapfile -t todo < <(missing)
	[[ ${#todo[@]} -eq 0 ]] || build_missing "${todo[@]}"
	exec 9>&-
fi

# The set: one directory of links, named by the requested keys.
setkey=$(for r in "${requested[@]}"; do echo "$r ${key[$r]}"; done | LC_ALL=C sort -u | sha256sum | cut -c1-16)
set_dir="$cache_root/sets/$setkey"
if [[ ! -f "$set_dir/.complete" ]]; then
	tmp=$(mktemp -d "$cache_root/.set.XXXXXX")
	for r in "${requested[@]}"; do ln -sfn "$(path "$r")/$r" "$tmp/$r"; done
	touch "$tmp/.complete"
	mkdir -p "$cache_root/sets"
	if ! mv -T "$tmp" "$set_dir" 2>/dev/null; then
		rm -rf "$tmp" # another caller made the same set meanwhile
	fi
fi
# In use from now on: not evicted by another checkout's build (above).
if [[ " ${requested[*]} " == *" controller-images.tar "* ]]; then touch "$(path controller-images.tar)"; fi
echo "$set_dir"
