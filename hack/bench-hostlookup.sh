#!/usr/bin/env bash
# bench-hostlookup.sh VARIANT N: the instructions HAProxy spends on an HTTP
# frontend's host lookup (render/http.go, rule 1), counted by callgrind, so
# the number does not depend on the machine's load. HAProxy ($HAPROXY_BIN,
# else haproxy) runs under valgrind with a frontend holding the host rules
# and a hosts map of 5,000 exact names; N requests for a.b.unknown.org
# (no exact host: every wildcard depth, then AnyHost) go to 127.0.0.1.
# VARIANT: "plus" (the one-label wildcard as a "+." key formatted and
# looked up in the hosts map, before issue 33's au33) or "onelabel" (the
# suffix looked up in its own, empty, map). Prints the total instructions
# (Ir); run N and a larger N and take the difference per request:
#   for v in plus onelabel; do for n in 200 1200; do hack/bench-hostlookup.sh $v $n; done; done
set -euo pipefail
variant=$1 n=$2
hap=${HAPROXY_BIN:-haproxy}
d=$(mktemp -d)
for i in $(seq 1 5000); do echo "h$i.example.com h$i"; done >"$d/hosts.map"
echo "* hany" >>"$d/hosts.map"
: >"$d/onelabel.map"
port=$((20000 + RANDOM % 20000))
{
	printf 'global\n  nbthread 1\ndefaults\n  mode http\n  timeout client 30s\n  timeout server 30s\n  timeout connect 5s\n'
	printf 'frontend f\n  bind 127.0.0.1:%s\n' "$port"
	echo "  http-request set-var(txn.host) req.hdr(host),field(1,:),lower"
	echo "  http-request set-var(txn.hid) var(txn.host),map_str($d/hosts.map)"
	case $variant in
	plus)
		echo "  http-request set-var-fmt(txn.hw) \"+.%[var(txn.host),field(2,.,0)]\" if !{ var(txn.hid) -m found }"
		echo "  http-request set-var(txn.hid) var(txn.hw),map_str($d/hosts.map) if !{ var(txn.hid) -m found }"
		;;
	onelabel)
		echo "  http-request set-var(txn.hid) var(txn.host),field(2,.,0),map_str($d/onelabel.map) if !{ var(txn.hid) -m found }"
		;;
	*) echo "variant: plus or onelabel" >&2; exit 2 ;;
	esac
	for i in 2 3 4 5 6 7 8 9; do
		echo "  http-request set-var-fmt(txn.hw) \"*.%[var(txn.host),field($i,.,0)]\" if !{ var(txn.hid) -m found }"
		echo "  http-request set-var(txn.hid) var(txn.hw),map_str($d/hosts.map) if !{ var(txn.hid) -m found }"
	done
	echo "  http-request set-var(txn.hid) str(*),map_str($d/hosts.map) if !{ var(txn.hid) -m found }"
	echo "  http-request return status 200 content-type text/plain lf-string \"%[var(txn.hid)]\""
} >"$d/h.cfg"
"$hap" -c -q -f "$d/h.cfg"
valgrind --tool=callgrind --callgrind-out-file="$d/cg.out" "$hap" -db -f "$d/h.cfg" 2>"$d/vg.log" &
pid=$!
trap 'kill -KILL $pid 2>/dev/null || true; rm -rf "$d"' EXIT
for _ in $(seq 1 3000); do curl -s -o /dev/null -H 'Host: h1.example.com' "http://127.0.0.1:$port/" && break; sleep 0.1; done
answer=$(curl -s -H 'Host: a.b.unknown.org' "http://127.0.0.1:$port/[1-$n]" | tail -c 4 || true)
kill -USR1 "$pid"
wait "$pid" || true
echo "$variant n=$n answer=$answer Ir=$(awk '/^summary:/ {print $2; exit}' "$d/cg.out")"
