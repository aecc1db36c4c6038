package gateway

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The index of rules by host (rulesByHost, covering) gives each table
// host the rules a scan of every rule with hostCovers gives, in the same
// order, and the hosts in the same order: random rules over hosts that
// nest (exact names, wildcards of several depths, any host).
func TestCoveringIsTheScan(t *testing.T) {
	hosts := []string{model.AnyHost, "a.example.com", "b.example.com", "x.a.example.com", "*.example.com",
		"*.a.example.com", "*.x.a.example.com", "example.com", "other.org", "*.org", "*.com"}
	rnd := rand.New(rand.NewPCG(30, 1))
	for trial := range 300 {
		rules := make([]httpRule, rnd.IntN(40))
		for i := range rules {
			rules[i] = httpRule{host: hosts[rnd.IntN(len(hosts))], age: rnd.IntN(5), ruleIdx: i}
		}
		// The scan the index replaces: every distinct host, then every
		// rule tested against each.
		var want []string
		for _, r := range rules {
			if !slices.Contains(want, r.host) {
				want = append(want, r.host)
			}
		}
		slices.SortFunc(want, precedenceAny)
		byHost, keys, wild := rulesByHost(rules)
		if !slices.Equal(keys, want) {
			t.Fatalf("trial %d: hosts %v, want %v", trial, keys, want)
		}
		for _, k := range keys {
			var scan []httpRule
			for _, r := range rules {
				if hostCovers(r.host, k) {
					scan = append(scan, r)
				}
			}
			if got := covering(rules, byHost, wild, k); !slices.EqualFunc(got, scan, sameRule) {
				t.Fatalf("trial %d, host %s: rules %v, want %v", trial, k, got, scan)
			}
		}
	}
}

func sameRule(a, b httpRule) bool {
	return a.host == b.host && a.age == b.age && a.ruleIdx == b.ruleIdx
}
