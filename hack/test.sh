#!/usr/bin/env bash
# make test's suite after fmt-check and vet, in two lanes side by side so
# that the machine's two cores stay busy and the whole run stays under 20
# minutes warm (docs/testing.md, "How long make test takes"):
#
#   lane 1: test/e2e on the host's HAProxy, then the end-to-end core
#           (VERSION_E2E) on each of TEST_VERSIONS;
#   lane 2: every other package one at a time (the conformance suite
#           among them), then the HAProxy client packages (VERSION_PKGS)
#           and the conformance suite (VERSION_CONFORMANCE) on each of
#           TEST_VERSIONS, the driver (RUNTIME_PKGS) on each of
#           RUNTIME_VERSIONS, then make fuzz.
#
# The two end-to-end runs share one lane because two test/e2e processes
# at once could take the same fixed loopback subnets; the other lane runs
# one package at a time, so at most two test processes run at once, as
# plain `go test -p 2 ./...` did. Lane 1's output is held in a file and
# printed when both lanes are done; the exit status is non-zero when
# either lane failed.
#
# Environment (the Makefile passes its variables): GO, PKGS, TESTFLAGS,
# TEST_TIMEOUT, TEST_VERSIONS, VERSION_PKGS, VERSION_E2E,
# VERSION_CONFORMANCE, RUNTIME_VERSIONS, RUNTIME_PKGS, VERSION_SKIP.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

GO=${GO:-go}
PKGS=${PKGS:-./...}
TEST_TIMEOUT=${TEST_TIMEOUT:-40m}
TEST_VERSIONS=${TEST_VERSIONS-3.0}
RUNTIME_VERSIONS=${RUNTIME_VERSIONS-}
RUNTIME_PKGS=${RUNTIME_PKGS-./internal/driver/runtimeapi/}
VERSION_CONFORMANCE=${VERSION_CONFORMANCE-}
VERSION_PKGS=${VERSION_PKGS-./internal/haproxy/... ./internal/cli/ ./internal/driver/runtimeapi/}
VERSION_E2E=${VERSION_E2E-}
VERSION_SKIP=${VERSION_SKIP-}
# shellcheck disable=SC2206 # TESTFLAGS is a list of flags
flags=(-count=1 -timeout "$TEST_TIMEOUT" ${TESTFLAGS:-})

e2e_pkg="$($GO list -m)/test/e2e"
# shellcheck disable=SC2086 # PKGS is a list of patterns
mapfile -t pkgs < <($GO list $PKGS)
rest=()
e2e=
for p in "${pkgs[@]}"; do
	if [ "$p" = "$e2e_pkg" ]; then e2e=$p; else rest+=("$p"); fi
done

# The other versions' binaries first, one at a time: a cold cache builds
# a root file system per version (hack/haproxy-version.sh).
declare -A bins=()
for v in $TEST_VERSIONS $RUNTIME_VERSIONS; do
	[ -z "${bins[$v]:-}" ] || continue
	bins[$v]="$(hack/haproxy-version.sh "$v" | tail -n 1)"
	echo "HAProxy $v: ${bins[$v]}"
done

# Each step returns on failure by itself: bash ignores set -e inside a
# function called as `lane || ...`.
lane1() {
	[ -n "$e2e" ] || return 0
	$GO test "${flags[@]}" "$e2e" || return
	[ -n "$VERSION_E2E" ] || return 0
	for v in $TEST_VERSIONS; do
		echo "test/e2e core on HAProxy $v (${bins[$v]})"
		HAPROXY_BIN="${bins[$v]}" $GO test "${flags[@]}" -run "$VERSION_E2E" "$e2e" || return
	done
}

lane2() {
	if [ "${#rest[@]}" -gt 0 ]; then
		$GO test -p 1 "${flags[@]}" "${rest[@]}" || return
	fi
	for v in $TEST_VERSIONS; do
		echo "HAProxy client packages on HAProxy $v (${bins[$v]})"
		# shellcheck disable=SC2086 # VERSION_PKGS is a list of patterns
		HAPROXY_BIN="${bins[$v]}" $GO test "${flags[@]}" ${VERSION_SKIP:+-skip "$VERSION_SKIP"} $VERSION_PKGS || return
		[ -n "$VERSION_CONFORMANCE" ] || continue
		echo "conformance on HAProxy $v (${bins[$v]})"
		# shellcheck disable=SC2086 # VERSION_CONFORMANCE is a list of patterns
		HAPROXY_BIN="${bins[$v]}" $GO test "${flags[@]}" $VERSION_CONFORMANCE || return
	done
	for v in $RUNTIME_VERSIONS; do
		echo "the driver on HAProxy $v (${bins[$v]})"
		# shellcheck disable=SC2086 # RUNTIME_PKGS is a list of patterns
		HAPROXY_BIN="${bins[$v]}" $GO test "${flags[@]}" ${VERSION_SKIP:+-skip "$VERSION_SKIP"} $RUNTIME_PKGS || return
	done
	make --no-print-directory fuzz
}

# failures prints, for each failing test in the logs given, the lines its
# test files logged (t.Log, t.Error, t.Fatal: "name_test.go:N: ...") around
# its "--- FAIL" line, at most 400 characters each: the apiserver and
# controller logs a failing test dumps on its way out can be long enough to
# push the failure's own message out of a CI log's tail.
failures() {
	awk '
		/--- (PASS|SKIP)|=== RUN/ { n = 0; after = 0; next }
		/--- FAIL/ {
			for (i = 0; i < n; i++) print buf[i]
			print; n = 0; found = 1; after = 1; next
		}
		/_test\.go:[0-9]+: |^panic: / {
			line = length($0) > 400 ? substr($0, 1, 400) "..." : $0
			if (after) { print line; next }
			if (n == 40) { for (i = 1; i < n; i++) buf[i-1] = buf[i]; n-- }
			buf[n++] = line
		}
		END { if (!found) print "(no --- FAIL line: see the output above)" }
	' "$@"
}

log="$(mktemp)"
log2="$(mktemp)"
trap 'rm -f "$log" "$log2"' EXIT
lane1 >"$log" 2>&1 || exit &
pid=$!
rc2=0
lane2 2>&1 | tee "$log2" || rc2=$?
rc1=0
wait "$pid" || rc1=$?
echo "--- test/e2e and its core on other HAProxy versions (run beside the above) ---"
cat "$log"
if [ "$rc1" != 0 ] || [ "$rc2" != 0 ]; then
	echo "--- the failing tests' own lines (from both lanes) ---"
	failures "$log" "$log2"
fi
echo "lane 1 (test/e2e): exit $rc1; lane 2 (the other packages, versions, fuzz): exit $rc2"
[ "$rc1" = 0 ] && [ "$rc2" = 0 ]
