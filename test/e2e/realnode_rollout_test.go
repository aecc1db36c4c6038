package e2e

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// rollingUpdate rolls real Pods (the Deployments deps of app web: agnhost
// netexec with a readiness probe, a preStop pause and a grace period, one
// Deployment per node) under a steady load through HAProxy, for the
// externalTrafficPolicy Cluster Service on 8001 and the Local one on 8002
// (node mode, the default node check against the real kube-proxy's
// /healthz): no connection fails, HAProxy does not reload, and both old
// and new Pods answer.
func (r *realNodeEnv) rollingUpdate(t *testing.T, deps []string) {
	services := map[corev1.ServiceExternalTrafficPolicy]int32{
		corev1.ServiceExternalTrafficPolicyCluster: 8001,
		corev1.ServiceExternalTrafficPolicyLocal:   8002,
	}
	old := r.podNames("web")
	r.startController()
	defer r.stopController()
	for _, port := range services {
		addr := r.serviceAddr(port)
		r.eventually("served on "+addr, func() error {
			name, err := r.hostname(addr)
			if err == nil && !old[name] {
				return fmt.Errorf("answered by %q, not a Pod of web", name)
			}
			return err
		})
	}
	reloads := r.reloads()

	loads := map[corev1.ServiceExternalTrafficPolicy]*steadyLoad{}
	for policy, port := range services {
		loads[policy] = r.startSteadyLoad(r.serviceAddr(port))
	}
	r.restart(deps...)
	r.waitRolledOut(deps...)
	now := r.podNames("web")
	// A few more connections reach only the new Pods.
	r.eventually("new Pods answer", func() error {
		for _, port := range services {
			name, err := r.hostname(r.serviceAddr(port))
			if err != nil {
				return err
			}
			if !now[name] {
				return fmt.Errorf("answered by %q, not a new Pod", name)
			}
		}
		return nil
	})
	for policy, l := range loads {
		total, failed, seen := l.stop()
		var fromOld, fromNew int
		for name, n := range seen {
			switch {
			case old[name]:
				fromOld += n
			case now[name]:
				fromNew += n
			default:
				t.Errorf("%s: answered by %q, neither an old nor a new Pod", policy, name)
			}
		}
		t.Logf("%s: %d connections, %d failed, %d answered by old Pods, %d by new; Pods %v", policy, total, len(failed), fromOld, fromNew, slices.Sorted(maps.Keys(seen)))
		if len(failed) > 0 {
			t.Errorf("%s: %d of %d connections failed, first: %v", policy, len(failed), total, failed[:min(5, len(failed))])
		}
		if fromOld == 0 || fromNew == 0 {
			t.Errorf("%s: want answers from old and new Pods, got %d and %d", policy, fromOld, fromNew)
		}
	}
	if got := r.reloads(); got != reloads {
		t.Errorf("HAProxy reloaded %d times during the rollout, want 0", got-reloads)
	}
}
