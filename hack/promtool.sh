#!/usr/bin/env bash
# Installs promtool (Debian's prometheus package) if it is missing, without
# ever starting the Prometheus server the package carries: services are
# kept from starting through policy-rc.d (created for the install when the
# machine has none), and the unit is disabled afterwards.
set -euo pipefail

if command -v promtool >/dev/null 2>&1; then
	echo "promtool: $(command -v promtool)"
	exit 0
fi
sudo=
if [ "$(id -u)" != 0 ]; then sudo=sudo; fi

policy=/usr/sbin/policy-rc.d
created=
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
	$sudo chmod 755 "$policy"
	created=1
fi
cleanup() { if [ -n "$created" ]; then $sudo rm -f "$policy"; fi; }
trap cleanup EXIT

$sudo apt-get update
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus
# Never leave the server enabled or running: only promtool is wanted.
if [ -d /run/systemd/system ]; then
	$sudo systemctl disable --now prometheus.service >/dev/null 2>&1 || true
elif command -v update-rc.d >/dev/null 2>&1; then
	$sudo update-rc.d prometheus disable >/dev/null 2>&1 || true
fi
echo "promtool: $(command -v promtool)"
