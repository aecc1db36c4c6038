#!/usr/bin/env bash
# make test's suite after fmt-check and vet, as a queue of jobs that
# TEST_JOBS workers take longest first (docs/testing.md, "How make test
# runs"):
#
#   - every top-level test of test/e2e (its binary built once), several
#     to a process sharing its apiserver (E2E_GROUP seconds of them:
#     e2ejobs below), on the host's HAProxy in the suite's default
#     listener mode (tproxy where it can be set up: HKS_E2E_LISTENERS),
#     those matching PORTS_E2E again in ports mode
#     (HKS_E2E_LISTENERS=ports), and those matching VERSION_E2E again on
#     each of TEST_VERSIONS;
#   - each package named in hack/test-weights.txt, one job each; every
#     other package in one job ("unit"), one package at a time;
#   - the HAProxy client packages (VERSION_PKGS) on each of TEST_VERSIONS,
#     the driver (RUNTIME_PKGS) on each of RUNTIME_VERSIONS;
#   - the conformance suite (VERSION_CONFORMANCE) in one job on one
#     real-node tier: on the host's HAProxy, then on each of TEST_VERSIONS;
#     and the profiles TPROXY_CONFORMANCE names on the host's HAProxy in
#     tproxy mode, a job of its own (REL@tproxy: its own tier) beside it;
#   - make fuzz;
#   - the tests of hack/image, a module of its own (the image builders).
#
# Every test binary runs in a network namespace of its own
# (hack/netns-exec.sh), so that two of them at once can take the same
# fixed loopback addresses and ports; without root (no unshare --net) the
# jobs run one at a time in the host's namespace instead. A job's output is
# printed when it ends (an e2e test's only when it failed); the run ends
# with each job's time, and, when one failed, the failing tests' own lines.
# The exit status is non-zero when any job failed.
#
# hack/test-weights.txt holds each long job's seconds and CPU seconds from
# a warm run (the table this script prints at its end): the order the
# queue takes them in, longest first, so that no long job starts last. A
# job it does not name counts as DEFAULT_WEIGHT seconds; an e2e group as
# the sum of its tests'. (Admitting jobs by their CPU rates instead, up to
# 6 at once while the rates added up to 2.2 cores, was measured and
# removed: the same queue for more CPU, docs/testing.md.)
#
# Environment (the Makefile passes its variables): GO, PKGS, TESTFLAGS
# (flags for every test binary, e.g. -v; given to test/e2e's binary as
# -test.FLAG), TEST_TIMEOUT, TEST_JOBS, E2E_GROUP, TEST_VERSIONS, VERSION_PKGS,
# VERSION_E2E, PORTS_E2E, VERSION_CONFORMANCE, TPROXY_CONFORMANCE,
# RUNTIME_VERSIONS, RUNTIME_PKGS, VERSION_SKIP; TEST_FUZZ= leaves make
# fuzz out. HKS_E2E_LISTENERS=ports runs the whole e2e suite per port
# (PORTS_E2E then adds no job), =tproxy in tproxy mode.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD

GO=${GO:-go}
PKGS=${PKGS:-./...}
TEST_TIMEOUT=${TEST_TIMEOUT:-40m}
TEST_JOBS=${TEST_JOBS:-2}
TEST_VERSIONS=${TEST_VERSIONS-3.0}
RUNTIME_VERSIONS=${RUNTIME_VERSIONS-}
RUNTIME_PKGS=${RUNTIME_PKGS-./internal/driver/runtimeapi/}
VERSION_CONFORMANCE=${VERSION_CONFORMANCE-}
VERSION_PKGS=${VERSION_PKGS-./internal/haproxy/... ./internal/cli/ ./internal/driver/runtimeapi/}
VERSION_E2E=${VERSION_E2E-}
PORTS_E2E=${PORTS_E2E-}
TPROXY_CONFORMANCE=${TPROXY_CONFORMANCE-}
# The ports core is the suite again in the other mode: nothing to add when
# the whole suite runs per-port frontends already.
[ "${HKS_E2E_LISTENERS:-}" != ports ] || PORTS_E2E=
VERSION_SKIP=${VERSION_SKIP-}
TEST_FUZZ=${TEST_FUZZ-1}
DEFAULT_WEIGHT=10
E2E_GROUP=${E2E_GROUP:-90}
# shellcheck disable=SC2206 # TESTFLAGS is a list of flags
testflags=(${TESTFLAGS:-})
# The flags every test binary gets (go test's, as the binary takes them).
binflags=(-test.count=1 -test.timeout "$TEST_TIMEOUT")
for f in "${testflags[@]}"; do
	case $f in -test.*) binflags+=("$f") ;; -*) binflags+=("-test.${f#-}") ;; *) binflags+=("$f") ;; esac
done

export TEST_NETNS=1 # hack/test-run.sh: each binary in a namespace of its own
if ! unshare --net true 2>/dev/null; then
	echo "hack/test.sh: no network namespace (unshare --net needs root): one job at a time, in the host's namespace"
	TEST_NETNS=
	TEST_JOBS=1
	PORTS_E2E= # the e2e suite runs per port already (no namespace for tproxy)
	TPROXY_CONFORMANCE=
fi

work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

mod="$($GO list -m)"
# Every package's test binary is built once, before the queue, into a
# directory that outlives the run, one per checkout (TEST_BINARIES, under
# ~/.cache/haproxy-k8s-sync/test-binaries): go test -c links a binary
# again only when what it is built from changed (it compares the build ID
# written in the file), and the jobs run it as often as they need (each
# e2e test, each HAProxy version) without linking it again. hack/fuzz.sh
# keeps its fuzzing binaries there too.
# shellcheck source=hack/test-binaries.sh
. hack/test-binaries.sh
# A checkout's first run starts from a copy of the binaries of the
# checkout whose whole suite (test/e2e's binary) was built last (make
# test builds with -trimpath, so a binary does not depend on where its
# checkout is): go test -c then links only what differs, and a CI clone
# at a new path does not link every binary again.
if [ ! -d "$TEST_BINARIES" ]; then
	seed="$(ls -t "$TEST_BINARIES_CACHE"/*/test/e2e/pkg.test 2>/dev/null | head -n 1 || true)"
	seed=${seed%test/e2e/pkg.test}
	mkdir -p "$TEST_BINARIES"
	if [ -n "$seed" ] && [[ " ${GOFLAGS:-} " == *" -trimpath "* ]]; then
		echo "test binaries: starting from a copy of $seed"
		cp -a "$seed." "$TEST_BINARIES/" || true
	fi
fi
touch "$TEST_BINARIES"
# Checkouts not tested for two weeks leave their binaries behind, and so
# do those beyond the six tested last once idle for two hours: a set is
# ~1.5 GB, and a machine that tests a fresh clone many times a day (a
# session's CI checks) filled its disk with them (kubelet's disk-pressure
# evictions failed TestRealNodeChartAnnounce, 2026-11-29).
find "$TEST_BINARIES_CACHE" -mindepth 1 -maxdepth 1 -type d -mtime +14 -exec rm -rf {} + 2>/dev/null || true
# shellcheck disable=SC2012 # names are hex hashes
ls -dt "$TEST_BINARIES_CACHE"/*/ 2>/dev/null | tail -n +7 | while read -r old; do
	find "$old" -maxdepth 0 -mmin +120 -exec rm -rf {} + 2>/dev/null || true
done || true
declare -A weight=()
while read -r secs _ name; do # seconds, CPU seconds, job
	[ -n "${name:-}" ] && [ "${secs:0:1}" != "#" ] && weight[$name]=$secs
done <hack/test-weights.txt

# rels PATTERN...: the packages of PATTERNs that have tests, relative
# to the module.
rels() {
	# shellcheck disable=SC2068 # patterns
	$GO list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' $@ | sed -e "s|^$mod/||" -e '/^$/d'
}
# built RELS...: those of RELS among PKGS's (the binaries built).
built() { for rel in "$@"; do [ -z "${hastests[$rel]:-}" ] || echo "$rel"; done; }
# shellcheck disable=SC2086 # lists of patterns
mapfile -t tested < <(rels $PKGS)
declare -A hastests=()
for rel in "${tested[@]}"; do hastests[$rel]=1; done
# shellcheck disable=SC2046,SC2086
mapfile -t vrels < <(built $(rels $VERSION_PKGS))
# shellcheck disable=SC2046,SC2086
mapfile -t rrels < <(built $(rels $RUNTIME_PKGS))
unit=()
e2e=
own=()
conf=()
# conformance REL: REL is a package of VERSION_CONFORMANCE (a job of its own).
conformance() {
	local c
	for c in $VERSION_CONFORMANCE; do
		c=${c#./}
		[ "${c%/}" != "$1" ] || return 0
	done
	return 1
}
for rel in "${tested[@]}"; do
	if conformance "$rel"; then
		conf+=("$rel")
	elif [ "$rel" = test/e2e ]; then
		e2e=$rel
	elif [ -n "${weight[$rel]:-}" ]; then
		own+=("$rel")
	else
		unit+=("$rel")
	fi
done

echo "building ${#tested[@]} test binaries in $TEST_BINARIES ($TEST_JOBS at once)"
build() { # build REL: its test binary; its log in $work/build.N
	mkdir -p "$TEST_BINARIES/$1"
	$GO test -c -o "$TEST_BINARIES/$1/pkg.test" "./$1"
}
n=0
for i in "${!tested[@]}"; do
	build "${tested[$i]}" >"$work/build.$i" 2>&1 || echo "$i" >>"$work/build.failed" &
	n=$((n + 1))
	if [ "$n" -ge "$TEST_JOBS" ]; then
		wait -n || true
		n=$((n - 1))
	fi
done
wait
if [ -s "$work/build.failed" ]; then
	while read -r i; do
		echo "--- building ${tested[$i]}'s test binary failed:"
		cat "$work/build.$i"
	done <"$work/build.failed"
	exit 1
fi

# The other versions' binaries first, one at a time: a cold cache builds
# a root file system per version (hack/haproxy-version.sh).
declare -A bins=()
for v in $TEST_VERSIONS $RUNTIME_VERSIONS; do
	[ -z "${bins[$v]:-}" ] || continue
	bins[$v]="$(hack/haproxy-version.sh "$v" | tail -n 1)"
	echo "HAProxy $v: ${bins[$v]}"
done

# The jobs: a name and a command line (words quoted with printf %q).
names=()
cmds=()
add() {
	local name=$1
	shift
	names+=("$name")
	cmds+=("$(printf '%q ' "$@")")
}
run() { # run NAME [HAPROXY_BIN] -- REL... -- ARGS...: the packages' binaries
	local name=$1 bin=$2
	shift 3
	add "$name" env ${bin:+HAPROXY_BIN="$bin"} "$root/hack/test-run.sh" "$@"
}

# e2ejobs SUFFIX WORD... -- TEST...: jobs of test/e2e's binary for the
# TESTs, each named test/e2e.TEST+TEST...SUFFIX, its command line the
# WORDs before hack/test-run.sh (an environment: env VAR=VALUE...). The
# tests share processes, up to E2E_GROUP seconds of them each by their
# weights (first fit, longest first; a longer test runs alone): the tests
# of a process share one apiserver and etcd, reset
# between them (kubeapi.Shared), and its network namespace
# (hack/netns-exec.sh; test/e2e's inNetns), where starting those for
# each test was most of the suite's CPU (docs/testing.md). A group runs
# with -test.v: the table at the end has each test's own seconds from it.
e2ejobs() {
	local suffix=$1 words=() t w i line placed
	shift
	while [ "$1" != -- ]; do
		words+=("$1")
		shift
	done
	shift
	local groups=() sums=()
	while read -r w t; do
		placed=
		for i in "${!groups[@]}"; do
			if [ $((sums[i] + w)) -le "$E2E_GROUP" ]; then
				groups[i]+="|$t"
				sums[i]=$((sums[i] + w))
				placed=1
				break
			fi
		done
		if [ -z "$placed" ]; then
			groups+=("$t")
			sums+=("$w")
		fi
	done < <(for t in "$@"; do printf '%s %s\n' "${weight[test/e2e.$t$suffix]:-$DEFAULT_WEIGHT}" "$t"; done | sort -k1,1nr -k2,2)
	for i in "${!groups[@]}"; do
		line=${groups[i]}
		if [[ $line == *"|"* ]]; then
			weight[test/e2e.${line//|/+}$suffix]=${sums[i]}
			add "test/e2e.${line//|/+}$suffix" "${words[@]}" "$root/hack/test-run.sh" test/e2e -- -test.run "^($line)\$" -test.v "${binflags[@]}"
		else
			add "test/e2e.$line$suffix" "${words[@]}" "$root/hack/test-run.sh" test/e2e -- -test.run "^$line\$" "${binflags[@]}"
		fi
	done
}
if [ -n "$e2e" ]; then
	mapfile -t e2etests < <(cd test/e2e && "$TEST_BINARIES/test/e2e/pkg.test" -test.list '^Test')
	e2ejobs "" env -- "${e2etests[@]}"
	if [ -n "$PORTS_E2E" ]; then
		mapfile -t picked < <(for t in "${e2etests[@]}"; do [[ ! $t =~ $PORTS_E2E ]] || echo "$t"; done)
		e2ejobs @ports env HKS_E2E_LISTENERS=ports -- "${picked[@]}"
	fi
	if [ -n "$VERSION_E2E" ]; then
		mapfile -t picked < <(for t in "${e2etests[@]}"; do [[ ! $t =~ $VERSION_E2E ]] || echo "$t"; done)
		for v in $TEST_VERSIONS; do
			e2ejobs "@$v" env HAPROXY_BIN="${bins[$v]}" -- "${picked[@]}"
		done
	fi
fi
for rel in "${own[@]}"; do
	run "$rel" "" -- "$rel" -- "${binflags[@]}"
done
if [ "${#unit[@]}" -gt 0 ]; then
	run unit "" -- "${unit[@]}" -- "${binflags[@]}"
fi
skip=(${VERSION_SKIP:+-test.skip "$VERSION_SKIP"})
for v in $TEST_VERSIONS; do
	run "clients@$v" "${bins[$v]}" -- "${vrels[@]}" -- "${skip[@]}" "${binflags[@]}"
done
# The conformance suite on each HAProxy of TEST_VERSIONS, one after the
# other in one process, on one real-node tier (the longest part of a run
# to start; HKS_CONFORMANCE_HAPROXY), in the suite's mode (ports unless
# HKS_E2E_LISTENERS says tproxy); and the profiles TPROXY_CONFORMANCE
# names on the host's HAProxy in tproxy mode, in a job of its own
# (REL@tproxy: its process, network namespace and tier) side by side with
# it. The host's HAProxy runs the suite in that one mode only, the mode
# run defaults to (Debian's HAProxy in the default mode: what most users
# run): each version and each mode is met once, one run of the suite less
# than the host's in both modes (~200 CPU-s; docs/testing.md). Without the
# tproxy job (TPROXY_CONFORMANCE empty, no root, or the suite in tproxy
# mode already) the host's HAProxy runs first in the per-version job.
hostbin=${HAPROXY_BIN:-$(command -v haproxy || echo /usr/sbin/haproxy)}
tproxyconf=
[ -z "$TPROXY_CONFORMANCE" ] || [ "${HKS_E2E_LISTENERS:-}" = tproxy ] || tproxyconf=1
confbins=
[ -n "$tproxyconf" ] || confbins=$hostbin
for v in $TEST_VERSIONS; do confbins+=" ${bins[$v]}"; done
[ -n "${confbins// /}" ] || confbins=$hostbin
for rel in "${conf[@]}"; do
	add "$rel" env HKS_CONFORMANCE_HAPROXY="${confbins# }" "$root/hack/test-run.sh" "$rel" -- "${binflags[@]}"
	if [ -n "$tproxyconf" ]; then
		add "$rel@tproxy" env HKS_CONFORMANCE_HAPROXY="$hostbin" HKS_E2E_LISTENERS=tproxy \
			HKS_CONFORMANCE_PROFILES="$TPROXY_CONFORMANCE" \
			"$root/hack/test-run.sh" "$rel" -- -test.run '^TestConformance$' "${binflags[@]}"
	fi
done
for v in $RUNTIME_VERSIONS; do
	run "runtime@$v" "${bins[$v]}" -- "${rrels[@]}" -- "${skip[@]}" "${binflags[@]}"
done
[ -z "$TEST_FUZZ" ] || add fuzz make --no-print-directory fuzz
# hack/image is a module of its own (the image builders): its tests too.
add hack/image "$GO" -C "$root/hack/image" test -count=1 ./...

# Longest first.
mapfile -t order < <(for i in "${!names[@]}"; do
	printf '%s %s\n' "${weight[${names[$i]}]:-$DEFAULT_WEIGHT}" "$i"
done | sort -k1,1nr -k2,2n | cut -d' ' -f2)

echo "${#names[@]} jobs, $TEST_JOBS at once"
declare -A running=() began=()
took=()
failed=()
# Each job's CPU (user + system, its waited-for children's included) from
# /usr/bin/time where it is installed: the suite is bound by CPU, and a
# job's seconds alone do not say what it costs the other.
timer=()
[ ! -x /usr/bin/time ] || timer=(/usr/bin/time -f '%U %S' -o)
start() {
	local i=$1
	began[$i]=$(date +%s.%N)
	"${timer[@]}" ${timer:+"$work/$i.cpu"} bash -c "${cmds[$i]}" >"$work/$i.log" 2>&1 &
	running[$!]=$i
}
cpu() { # cpu I: the job's CPU seconds, or - when not measured
	[ -s "$work/$1.cpu" ] && awk 'END { printf "%.0f", $1 + $2 }' "$work/$1.cpu" || echo -
}
reap() {
	local pid rc=0 i secs
	wait -n -p pid "${!running[@]}" || rc=$?
	i=${running[$pid]}
	unset "running[$pid]"
	secs=$(awk -v a="${began[$i]}" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	took[$i]=$secs
	if [ "$rc" != 0 ]; then
		failed+=("$i")
		echo "FAIL ${names[$i]} (${secs} s, exit $rc)"
		if [ "$(wc -l <"$work/$i.log")" -le 3000 ]; then
			cat "$work/$i.log"
		else
			head -n 100 "$work/$i.log"
			echo "[... $(wc -l <"$work/$i.log") lines in all: the first 100 and the last 1000 ...]"
			tail -n 1000 "$work/$i.log"
		fi
	else
		echo "ok   ${names[$i]} (${secs} s)"
		# A package job's line per package (a -v run's per top-level test).
		[[ ${names[$i]} == test/e2e.* ]] || grep -E '^(ok|--- [A-Z]+: [^/]+ )' "$work/$i.log" || true
	fi
}
t0=$SECONDS
for i in "${order[@]}"; do
	while [ "${#running[@]}" -ge "$TEST_JOBS" ]; do reap; done
	start "$i"
done
while [ "${#running[@]}" -gt 0 ]; do reap; done

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

echo "--- each job's seconds and CPU seconds, longest first (hack/test-weights.txt takes them: $TEST_BINARIES/test-weights.txt) ---"
# A group of e2e tests (test/e2e.A+B...) adds a row for each of its tests
# (their seconds from its -test.v lines; CPU - : the group's row has it).
{
	for i in "${!names[@]}"; do
		printf '%6.0f %5s %s\n' "${took[$i]:-0}" "$(cpu "$i")" "${names[$i]}"
		[[ ${names[$i]} == test/e2e.*+* ]] || continue
		suffix=
		[[ ${names[$i]} != *@* ]] || suffix=@${names[$i]##*@}
		sed -nE 's/^--- [A-Z]+: ([^ ]+) \(([0-9.]+)s\)$/\2 \1/p' "$work/$i.log" |
			awk -v s="$suffix" '{ printf "%6.0f %5s test/e2e.%s%s\n", $1, "-", $2, s }'
	done
} | sort -k1,1nr >"$work/table"
awk 'NR <= 40' "$work/table"
# The whole table but the groups' rows, as hack/test-weights.txt takes it
# (its rows per test weigh the groups), kept beside the test binaries.
grep -v '^ *[0-9]* *[-0-9]* test/e2e\.[^ ]*+' "$work/table" | awk '{ print $1, $2, $3 }' >"$TEST_BINARIES/test-weights.txt" || true
total=$(for i in "${!names[@]}"; do cpu "$i"; echo; done | awk '$1 != "-" { s += $1 } END { printf "%.0f", s }')
echo "${#names[@]} jobs in $((SECONDS - t0)) s, $TEST_JOBS at once, $total CPU seconds in the jobs"
if [ "${#failed[@]}" -gt 0 ]; then
	echo "--- the failing tests' own lines ---"
	for i in "${failed[@]}"; do
		echo "== ${names[$i]}"
		failures "$work/$i.log"
	done
	echo "failed: $(for i in "${failed[@]}"; do printf '%s ' "${names[$i]}"; done)"
	exit 1
fi
