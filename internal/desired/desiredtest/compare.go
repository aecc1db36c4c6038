package desiredtest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Seeds are the seeds a test runs: defaults, or the one the environment
// variable HKS_INCREMENTAL_SEED names (to replay a failure).
func Seeds(t testing.TB, defaults ...uint64) []uint64 {
	s := os.Getenv("HKS_INCREMENTAL_SEED")
	if s == "" {
		return defaults
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("HKS_INCREMENTAL_SEED: %v", err)
	}
	return []uint64{n}
}

// Servers is each backend's servers as "addr:port" with "(maint)" or
// "(drain)", one backend a line: what the model says, slot-free.
func Servers(cfg model.Config) string {
	var b strings.Builder
	for _, be := range cfg.Backends {
		fmt.Fprintf(&b, "%s: %s\n", be.Name, List(be.Servers))
	}
	return b.String()
}

// Serving is each backend's servers in service once HAProxy runs cfg:
// not in maintenance, and, in a backend whose servers follow their node,
// not on a node in maintenance in the model.NodesBackend. Drain counts as
// in service ("(drain)").
func Serving(cfg model.Config) map[string]string {
	down := map[string]bool{}
	for _, be := range cfg.Backends {
		if be.Name == model.NodesBackend {
			for _, s := range be.Servers {
				if s.Maint {
					down[s.Addr.String()] = true
				}
			}
		}
	}
	out := map[string]string{}
	for _, be := range cfg.Backends {
		var in []model.Server
		for _, s := range be.Servers {
			if !s.Maint && !(be.TrackNodes && down[s.Addr.String()]) {
				in = append(in, s)
			}
		}
		out[be.Name] = List(in)
	}
	return out
}

// List is servers as Servers writes them.
func List(ss []model.Server) string {
	var parts []string
	for _, s := range ss {
		p := s.Key().String()
		switch {
		case s.Maint:
			p += "(maint)"
		case s.Drain:
			p += "(drain)"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}

// Diff lists the lines of got and want that differ.
func Diff(got, want string) string {
	g, x := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for i := 0; i < len(g) || i < len(x); i++ {
		var a, c string
		if i < len(g) {
			a = g[i]
		}
		if i < len(x) {
			c = x[i]
		}
		if a != c {
			fmt.Fprintf(&b, "  got  %s\n  want %s\n", a, c)
		}
	}
	return b.String()
}
