#!/usr/bin/env bash
# fuzz.sh PKG:NAME:BUDGET... runs each fuzz target NAME of package PKG
# (./internal/...) for BUDGET (go test's -fuzztime: 8s, 20000x; FUZZTIME
# overrides every budget), as `go test -run '^$' -fuzz '^NAME$'` does, but
# with one fuzzing build per package instead of one per target: the
# binary (go test -c -fuzz) is kept in TEST_BINARIES/fuzz (hack/test.sh's
# directory; by default one per checkout under
# ~/.cache/haproxy-k8s-sync/test-binaries) and linked again only when what
# it is built from changed. The corpus grows where go test keeps it
# (GOCACHE/fuzz/IMPORTPATH). Stops at the first target that fails.
#
# A target whose fuzzing binary is the one its whole budget last passed on
# (the same code: go's build ID, kept beside the binary in NAME.fuzzed) gets
# 1/FUZZ_UNCHANGED of it (default 4): a warm run of an unchanged tree adds
# a little to the corpus instead of spending make test's longest CPU again
# on what was fuzzed already; a target whose package or any package it is
# built from changed gets its whole budget. FUZZ_UNCHANGED=1, or FUZZTIME,
# gives every target the whole budget (or FUZZTIME).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
GO=${GO:-go}
# shellcheck source=hack/test-binaries.sh
. hack/test-binaries.sh
bindir=$TEST_BINARIES/fuzz
gocache="$($GO env GOCACHE)"
mod="$($GO list -m)"
unchanged=${FUZZ_UNCHANGED:-4}
declare -A built=()
for t in "$@"; do
	pkg=${t%%:*}
	rest=${t#*:}
	name=${rest%%:*}
	budget=${FUZZTIME:-${rest#*:}}
	rel=${pkg#./}
	rel=${rel%/}
	bin=$bindir/$rel/pkg.test
	if [ -z "${built[$rel]:-}" ]; then
		mkdir -p "$bindir/$rel"
		$GO test -c -fuzz=. -o "$bin" "./$rel"
		built[$rel]=1
	fi
	id="$($GO tool buildid "$bin")"
	stamp=$bindir/$rel/$name.fuzzed
	# whole: this run spends the target's own whole budget (then stamped).
	whole=1 note="whole budget"
	if [ -n "${FUZZTIME:-}" ]; then
		whole= note="FUZZTIME"
	elif [ "$unchanged" -gt 1 ] && [[ $budget == *x ]] && [ "$(cat "$stamp" 2>/dev/null)" = "$id" ]; then
		budget=$((${budget%x} / unchanged))x
		whole= note="unchanged since its whole budget passed"
	fi
	echo "fuzz $name ($pkg, $budget, $note)"
	(cd "$rel" && "$bin" -test.run='^$' -test.fuzz="^$name\$" -test.fuzztime="$budget" \
		-test.fuzzcachedir="$gocache/fuzz/$mod/$rel" -test.timeout=10m -test.paniconexit0)
	[ -z "$whole" ] || echo "$id" >"$stamp"
	echo "ok   $name"
done
