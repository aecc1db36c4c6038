package desired

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

func TestListenerProblem(t *testing.T) {
	svc := &corev1.Service{}
	own := []model.Bind{{Addr: netip.MustParseAddr("203.0.113.10"), Port: 80}}
	every := []model.Bind{{Port: 80}}
	shared := Options{SharedListener: true}
	for _, tc := range []struct {
		name string
		fe   model.Frontend
		opts Options
		want []string // in the message; nil: no problem
	}{
		{"defaults", model.Frontend{Binds: own, TimeoutClient: time.Minute}, shared, nil},
		{"maxconn", model.Frontend{Binds: own, MaxConn: 100, TimeoutClient: time.Minute}, shared, []string{"maxconn not applied"}},
		{"timeout client", model.Frontend{Binds: own, TimeoutClient: time.Hour}, shared, []string{"timeout-client not applied"}},
		{"both", model.Frontend{Binds: own, MaxConn: 1, TimeoutClient: time.Hour}, shared, []string{"maxconn and", "timeout-client not applied"}},
		{"ports mode", model.Frontend{Binds: own, MaxConn: 100}, Options{}, nil},
		{"every address keeps its frontend", model.Frontend{Binds: every, MaxConn: 100}, shared, nil},
	} {
		got := listenerProblem(svc, tc.fe, tc.opts)
		if tc.want == nil {
			if len(got) != 0 {
				t.Errorf("%s: %v, want no problem", tc.name, got)
			}
			continue
		}
		if len(got) != 1 || got[0].Reason != ReasonSharedListener {
			t.Errorf("%s: %v, want one %s", tc.name, got, ReasonSharedListener)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(got[0].Message, w) {
				t.Errorf("%s: %q lacks %q", tc.name, got[0].Message, w)
			}
		}
	}
}
