#!/usr/bin/env bash
# netns-exec.sh PROGRAM [ARG...] runs PROGRAM in a network namespace of
# its own, with only its loopback up. hack/test.sh runs every test binary
# so (`go test -exec`, and test/e2e's tests one by one): several run at
# once, and each may then take the same fixed loopback addresses and ports
# (127.0.0.1:8100, 127.81.20.0/24, ...) without meeting another. What a
# test creates beside it (its network namespaces under /run/netns, its
# cgroups, its files) is named per process already. Needs root (unshare
# --net); the host's own interfaces, routes and rules are never touched.
set -euo pipefail
if [ -z "${HKS_NETNS_EXEC:-}" ]; then
	HKS_NETNS_EXEC=1 exec unshare --net -- "$0" "$@"
fi
unset HKS_NETNS_EXEC
ip link set lo up
# internal/testing/privnet: a test binary in a namespace of its own
# already, which it would otherwise make itself.
export HKS_PRIVATE_NETNS=1
exec "$@"
