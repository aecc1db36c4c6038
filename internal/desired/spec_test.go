package desired

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

func sourceRanges(r ...string) svcOpt {
	return func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = r }
}

func rangesAnnotation(v string) svcOpt {
	return func(s *corev1.Service) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[settings.SourceRangesAnnotation] = v
	}
}

func clientIP(seconds int32) svcOpt {
	return func(s *corev1.Service) {
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		if seconds > 0 {
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &seconds}}
		}
	}
}

func TestSourceRangesAndAffinity(t *testing.T) {
	lastGood := settings.Defaults()
	lastGood.SourceRanges = "198.51.100.0/24"
	for _, tc := range []struct {
		name     string
		svc      *corev1.Service
		last     map[string]*settings.Settings
		ranges   string // of the TCP frontend and the UDP port; "-" for not configured
		affinity time.Duration
		udpBal   string
		problem  string
	}{
		{name: "open", svc: svc("default", "web", 0), ranges: "", udpBal: "roundrobin"},
		{name: "spec", svc: svc("default", "web", 0, sourceRanges("192.0.2.0/24", "2001:db8::/32")), ranges: "192.0.2.0/24,2001:db8::/32", udpBal: "roundrobin"},
		{name: "annotation", svc: svc("default", "web", 0, rangesAnnotation("203.0.113.0/24")), ranges: "203.0.113.0/24", udpBal: "roundrobin"},
		{name: "invalid, never good: left out", svc: svc("default", "web", 0, rangesAnnotation("203.0.113.0/24 }")),
			ranges: "-", problem: "web:InvalidSourceRanges"},
		{name: "invalid: last good ranges kept", svc: svc("default", "web", 0, rangesAnnotation("0.0.0.0/0,bogus")),
			last: map[string]*settings.Settings{"default/web": &lastGood}, ranges: "198.51.100.0/24", udpBal: "roundrobin", problem: "web:InvalidSourceRanges"},
		{name: "invalid ranges and annotation", svc: svc("default", "web", 0, rangesAnnotation("x"), annotate("balance", "x")),
			ranges: "-", problem: "web:InvalidAnnotation"},
		{name: "affinity default timeout", svc: svc("default", "web", 0, clientIP(0)), ranges: "", affinity: 3 * time.Hour, udpBal: "source"},
		{name: "affinity timeout", svc: svc("default", "web", 0, clientIP(60)), ranges: "", affinity: time.Minute, udpBal: "source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.svc
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "wg", Port: 51820, NodePort: 31820, Protocol: corev1.ProtocolUDP})
			o := defaults()
			o.UDP = true
			r := Compute(Input{Nodes: nodes[:1], Services: []*corev1.Service{s}, LastGood: tc.last}, o)
			if got := reasons(r); tc.problem == "" && len(got) > 0 || tc.problem != "" && (len(got) != 1 || got[0] != tc.problem) {
				t.Errorf("problems %v, want %q", got, tc.problem)
			}
			if tc.ranges == "-" {
				if len(r.Config.Frontends) != 0 || len(r.Config.UDP) != 0 {
					t.Errorf("configured: %+v %+v", r.Config.Frontends, r.Config.UDP)
				}
				return
			}
			if len(r.Config.Frontends) != 1 || len(r.Config.UDP) != 1 {
				t.Fatalf("frontends %+v, udp %+v", r.Config.Frontends, r.Config.UDP)
			}
			if got := settings.FormatSourceRanges(r.Config.Frontends[0].SourceRanges); got != tc.ranges {
				t.Errorf("frontend ranges %q, want %q", got, tc.ranges)
			}
			if got := settings.FormatSourceRanges(r.Config.UDP[0].SourceRanges); got != tc.ranges {
				t.Errorf("UDP ranges %q, want %q", got, tc.ranges)
			}
			be := r.Config.Backends[len(r.Config.Backends)-1]
			if be.Affinity != tc.affinity {
				t.Errorf("affinity %v, want %v", be.Affinity, tc.affinity)
			}
			if r.Config.UDP[0].Balance != tc.udpBal {
				t.Errorf("UDP balance %s, want %s", r.Config.UDP[0].Balance, tc.udpBal)
			}
		})
	}
}
