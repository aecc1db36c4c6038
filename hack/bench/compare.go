package main

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// -compare-pools: the same world served twice by a fresh HAProxy and
// controller in hybrid mode, first on one address for all with every
// status written (--publish-address 127.0.0.1), then each Service on its
// own address from the loopback pool (--address-pools), side by side.
// Both write every Service's status, and both measure the churn only
// once every status is written (statusSync), so that the churn is not
// that of the status writes' full passes.
func (b *bench) comparePools(ctx context.Context) (*result, error) {
	one := b.cfg
	one.pools, one.publish = false, "127.0.0.1"
	own := b.cfg
	own.pools, own.publish = true, ""
	b.cfg = one
	r1, err := b.runMode(ctx, "hybrid", one.changes)
	if err != nil {
		return nil, fmt.Errorf("one address: %w", err)
	}
	b.cfg = own
	r2, err := b.runMode(ctx, "hybrid", own.changes)
	if err != nil {
		return nil, fmt.Errorf("pools: %w", err)
	}
	r1.Mode, r2.Mode = "one-address", "pools"
	r1.Baseline = r2
	return r1, nil
}

// writesStatus reports whether the run's controller writes the
// LoadBalancer statuses (then statusSync waits for them).
func (c *config) writesStatus() bool { return c.pools || c.publish != "" }

// statusSync waits until each of the Services [0, n) lists its address in
// its status (with -pools one of the pool, otherwise the publish
// address), polling the list every two seconds, and returns when that was
// first seen and, with -pools, each Service's address.
func (b *bench) statusSync(ctx context.Context, n int, timeout time.Duration) (time.Time, map[int]netip.Addr, error) {
	pool := netip.PrefixFrom(poolFirst, 16)
	deadline := time.Now().Add(timeout)
	last := -1
	for {
		list, err := b.w.c.CoreV1().Services(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return time.Time{}, nil, err
		}
		now := time.Now()
		addrs := make(map[int]netip.Addr, n)
		for i := range list.Items {
			s := &list.Items[i]
			k, err := strconv.Atoi(s.Name[len("svc-"):])
			if err != nil || k >= n {
				continue
			}
			if a, ok := statusAddr(s, b.cfg, pool); ok {
				addrs[k] = a
			}
		}
		if len(addrs) != last {
			logf("  statuses: %d/%d", len(addrs), n)
			last = len(addrs)
		}
		if len(addrs) == n {
			return now, addrs, nil
		}
		if now.After(deadline) {
			return time.Time{}, nil, fmt.Errorf("%d of %d statuses written after %s", len(addrs), n, timeout)
		}
		if err := pause(ctx, 2*time.Second); err != nil {
			return time.Time{}, nil, err
		}
	}
}

// statusAddr is the address s's status lists for this run, ok when it is
// exactly one, ipMode Proxy, the run's kind.
func statusAddr(s *corev1.Service, c config, pool netip.Prefix) (netip.Addr, bool) {
	in := s.Status.LoadBalancer.Ingress
	if len(in) != 1 || in[0].IPMode == nil || *in[0].IPMode != corev1.LoadBalancerIPModeProxy {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(in[0].IP)
	if err != nil {
		return netip.Addr{}, false
	}
	if c.pools {
		return a, pool.Contains(a)
	}
	return a, in[0].IP == c.publish
}
