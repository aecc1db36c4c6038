#!/usr/bin/env bash
# test-run.sh REL... [-- ARG...] runs the test binaries hack/test.sh built
# (TEST_BINARIES/REL/pkg.test) one after the other, each in its package's
# directory as go test does, with the test binary flags ARG (-test.run=...,
# -test.timeout=...), and each in a network namespace of its own
# (hack/netns-exec.sh) when TEST_NETNS is set. Like go test with packages
# named, it prints "ok REL (N s)" for a package that passed, and its whole
# output then "FAIL REL (N s)" for one that failed (with -test.v, every
# package's output). The exit status is non-zero when any failed.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rels=()
args=()
while [ $# -gt 0 ]; do
	if [ "$1" = -- ]; then
		shift
		args=("$@")
		break
	fi
	rels+=("$1")
	shift
done
run=()
[ -z "${TEST_NETNS:-}" ] || run=("$root/hack/netns-exec.sh")
verbose=
for a in "${args[@]}"; do
	case $a in -test.v | -test.v=true | -test.v=test2json) verbose=1 ;; esac
done
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
rc=0
for rel in "${rels[@]}"; do
	bin=$TEST_BINARIES/$rel/pkg.test
	t0=$(date +%s.%N)
	(cd "$root/$rel" && "${run[@]}" "$bin" "${args[@]}") >"$out" 2>&1
	r=$?
	secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	if [ "$r" = 0 ]; then
		[ -z "$verbose" ] || cat "$out"
		printf 'ok  \t%s\t%ss\n' "$rel" "$secs"
	else
		cat "$out"
		printf 'FAIL\t%s\t%ss (exit %s)\n' "$rel" "$secs" "$r"
		rc=1
	fi
done
exit "$rc"
