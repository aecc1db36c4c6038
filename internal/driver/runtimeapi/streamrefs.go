package runtimeapi

import (
	"context"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
)

// Servers that streams still name. `del server` frees the server, and
// Debian's 2.6.12 lets it go while a stream still points at it: a request
// whose connection failed waits for its retry (the turn-around, 1 s) with
// no connection in use and no session counted, yet names the server (and
// sits in the server's list of streams). Deleted under it, the stream
// later reads freed memory: 2.6.12 aborted so ("malloc(): unaligned
// tcache chunk detected") in the e2e suite while a renewal deleted a slot
// a retrying request named. Measured by hand: the server in maintenance,
// `show sess` names it, `show servers conn` reports nothing in use, and
// 2.6.12 answers "Server deleted." where 3.0.11 and 3.4.7 refuse
// (haproxy/haproxy#2298; upstream commits 95c4d2482, 1b8c5abee, and
// ca686e320 of 3.5-dev3 for cookie persistence). So on releases before
// 3.0 (haproxy.Version.GuardsServerDeletion) the driver deletes a server
// only once no stream names it; later ones refuse by themselves, and the
// refusal is waited out as any other.

// namedByStreams returns the servers ("backend/server") that a stream of
// the running worker names (`show sess`), none on a release that guards
// their deletion itself.
func (d *HAProxy) namedByStreams(ctx context.Context, res *driver.Result) (map[string]bool, error) {
	if d.delGuarded {
		return nil, nil // HAProxy refuses those itself, with no `show sess` to read
	}
	ans, err := d.rt.ExecChecked(ctx, []string{"show sess"})
	res.Ops++
	if err != nil {
		return nil, err
	}
	return streamTargets(ans[0]), nil
}

// streamTargets reads the servers streams name from `show sess`'s answer,
// one stream a line: "0x...: proto=tcpv4 src=... fe=F be=B srv=S ts=...".
func streamTargets(answer string) map[string]bool {
	out := map[string]bool{}
	for line := range strings.Lines(answer) {
		_, rest, ok := strings.Cut(line, " be=")
		if !ok {
			continue
		}
		be, rest, _ := strings.Cut(rest, " ")
		srv, ok := strings.CutPrefix(rest, "srv=")
		if !ok {
			continue
		}
		srv, _, _ = strings.Cut(strings.TrimSpace(srv), " ")
		if be != "" && be != "<NONE>" && srv != "" && srv != "<none>" {
			out[be+"/"+srv] = true
		}
	}
	return out
}
