package ingress

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestParseConnect: proxy-connect-timeout (whole seconds) and
// timeout-connect (a HAProxy time, rounded up to the millisecond) as the
// backends' connect timeout and the tag of their names; nginx's key wins;
// 5 s is the defaults' (no backend of its own).
func TestParseConnect(t *testing.T) {
	n, h := NginxPrefix, HAProxyPrefix
	for _, tc := range []struct {
		ann  map[string]string
		want time.Duration // backendConnect
		tag  string
	}{
		{map[string]string{n + "proxy-connect-timeout": "2"}, 2 * time.Second, "c2000"},
		{map[string]string{n + "proxy-connect-timeout": "5"}, 0, ""},
		{map[string]string{h + "timeout-connect": "500ms"}, 500 * time.Millisecond, "c500"},
		{map[string]string{h + "timeout-connect": "1500us"}, 2 * time.Millisecond, "c2"},
		{map[string]string{h + "timeout-connect": "1500"}, 1500 * time.Millisecond, "c1500"},
		{map[string]string{h + "timeout-connect": "500ms", n + "proxy-connect-timeout": "3"}, 3 * time.Second, "c3000"},
		{map[string]string{HAProxyOldPrefix + "timeout-connect": "1s"}, time.Second, "c1000"},
		{map[string]string{}, 0, ""},
	} {
		s, _, refused := parseAnnotations(tc.ann)
		if refused != "" {
			t.Errorf("%v: refused %q", tc.ann, refused)
			continue
		}
		if got := s.backendConnect(); got != tc.want || connectTag(got) != tc.tag {
			t.Errorf("%v: %v tag %q, want %v tag %q", tc.ann, got, connectTag(got), tc.want, tc.tag)
		}
	}
}

// TestConnectPerRequestPatched: with Options.ConnectPerRequest (HAProxy
// 3.4+) an Ingress added with a connect timeout is the paths' map data in
// a patched pass as in a whole one (no backend of its own); without it,
// backends named by the value.
func TestConnectPerRequestPatched(t *testing.T) {
	for _, tc := range []struct {
		perRequest bool
		backend    bool // a backend ..._c2000
		connect    time.Duration
	}{{false, true, 0}, {true, false, 2 * time.Second}} {
		t.Run(fmt.Sprint("per-request=", tc.perRequest), func(t *testing.T) {
			in := benchInput(10)
			memo := &Memo{}
			opts := Options{Class: "haproxy", Addresses: []netip.Addr{netip.MustParseAddr("192.0.2.10")}, ConnectPerRequest: tc.perRequest, Last: memo}
			Compile(in, opts)
			in.Ingresses = append(slices.Clone(in.Ingresses), newVersion(in.Ingresses[0], func(c *netv1.Ingress) {
				c.Name, c.Spec.Rules[0].Host = "added", "added.example.com"
				c.Annotations = map[string]string{NginxPrefix + "proxy-connect-timeout": "2"}
			}))
			got := Compile(in, opts)
			if memo.patched != 1 {
				t.Errorf("not patched: %q", memo.Whole())
			}
			whole := opts
			whole.Last = nil
			if want := Compile(in, whole); !reflect.DeepEqual(got, want) {
				t.Fatalf("the patched result\n%s\ncompiling every Ingress\n%s", dump(got), dump(want))
			}
			if has := slices.ContainsFunc(got.Backends, func(b *model.Backend) bool { return strings.HasSuffix(b.Name, "_c2000") }); has != tc.backend {
				t.Errorf("a backend _c2000: %v, want %v", has, tc.backend)
			}
			var connect time.Duration
			for _, a := range got.Frontends[0].HTTP.Actions {
				if a.Ext != nil && a.Ext.Connect > 0 {
					connect = a.Ext.Connect
				}
			}
			if connect != tc.connect {
				t.Errorf("an action's connect timeout %v, want %v", connect, tc.connect)
			}
		})
	}
}
