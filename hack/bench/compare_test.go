package main

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestStatusAddr(t *testing.T) {
	proxy, vip := corev1.LoadBalancerIPModeProxy, corev1.LoadBalancerIPModeVIP
	pool := netip.PrefixFrom(poolFirst, 16)
	svc := func(mode *corev1.LoadBalancerIPMode, ips ...string) *corev1.Service {
		s := &corev1.Service{}
		for _, ip := range ips {
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip, IPMode: mode})
		}
		return s
	}
	pools, one := config{pools: true}, config{publish: "127.0.0.1"}
	for _, tc := range []struct {
		name string
		svc  *corev1.Service
		c    config
		ok   bool
	}{
		{"pool address", svc(&proxy, "127.64.0.7"), pools, true},
		{"not the pool's", svc(&proxy, "127.0.0.1"), pools, false},
		{"no ipMode", svc(nil, "127.64.0.7"), pools, false},
		{"VIP", svc(&vip, "127.64.0.7"), pools, false},
		{"two", svc(&proxy, "127.64.0.7", "127.64.0.8"), pools, false},
		{"none", svc(&proxy), pools, false},
		{"publish address", svc(&proxy, "127.0.0.1"), one, true},
		{"another", svc(&proxy, "127.64.0.7"), one, false},
	} {
		if _, ok := statusAddr(tc.svc, tc.c, pool); ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.ok)
		}
	}
}
