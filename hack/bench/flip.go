package main

import (
	"context"
	"fmt"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// flipResult is HAProxy's own time for a node change: a Runtime API
// command that puts a node's server in the NodesBackend in maintenance (or
// back), which HAProxy applies to every server following it. No
// controller takes part: it is the floor under a node change's latency.
type flipResult struct {
	Node      string  `json:"node"`      // the _nodes server flipped
	Followers int     `json:"followers"` // servers on that node's address in other backends
	Flips     int     `json:"flips"`
	P50       float64 `json:"p50_ms"`
	P99       float64 `json:"p99_ms"`
	Max       float64 `json:"max_ms"`
}

// nodeFlips puts _nodes/s1 in maintenance and back n times, timing each
// command from its send to HAProxy's answer. It leaves the node ready, as
// the controller set it (its resync would correct anything else).
func (o *observer) nodeFlips(ctx context.Context, n int) (*flipResult, error) {
	o.rt.Reset()
	states, err := o.rt.ShowServersState(ctx)
	if err != nil {
		return nil, err
	}
	slot := model.SlotName(0)
	res := &flipResult{Node: model.NodesBackend + "/" + slot}
	for _, s := range states {
		if s.Backend == model.NodesBackend && s.Server == slot {
			for _, f := range states {
				if f.Backend != model.NodesBackend && f.Addr == s.Addr {
					res.Followers++
				}
			}
		}
	}
	if res.Followers == 0 {
		return nil, fmt.Errorf("%s: no server follows it", res.Node)
	}
	var lat []time.Duration
	for range n {
		for _, state := range []string{"maint", "ready"} {
			t := time.Now()
			if _, err := o.rt.ExecChecked(ctx, []string{"set server " + res.Node + " state " + state}); err != nil {
				return nil, err
			}
			lat = append(lat, time.Since(t))
		}
	}
	s := sortedCopy(lat)
	res.Flips, res.P50, res.P99, res.Max = len(s), percentile(s, .50), percentile(s, .99), ms(s[len(s)-1])
	logf("HAProxy alone, %d flips of %s (%d servers follow it): p50 %.1f ms, p99 %.1f ms, max %.1f ms",
		res.Flips, res.Node, res.Followers, res.P50, res.P99, res.Max)
	return res, nil
}
