# shellcheck shell=bash
# Sourced by hack/test.sh and hack/fuzz.sh: sets TEST_BINARIES, the
# directory that keeps this checkout's test binaries between runs (one per
# checkout under ~/.cache/haproxy-k8s-sync/test-binaries, by the hash of
# its path; go test -c links a binary again only when its inputs changed),
# unless it is set already. Needs root set to the checkout.
TEST_BINARIES_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/haproxy-k8s-sync/test-binaries
export TEST_BINARIES=${TEST_BINARIES:-$TEST_BINARIES_CACHE/$(printf '%s' "$root" | sha256sum | cut -c1-16)}
