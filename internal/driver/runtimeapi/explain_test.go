package runtimeapi

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A failed reload that `haproxy -c` accepts names the binds the failed
// config adds to the running one, at most explainLimit of them.
func TestNewBinds(t *testing.T) {
	fe := func(name string, ports ...uint16) model.Frontend {
		f := model.Frontend{Name: name}
		for _, p := range ports {
			f.Binds = append(f.Binds, model.Bind{Addr: netip.MustParseAddr("192.0.2.1"), Port: p})
		}
		return f
	}
	running := model.Config{Frontends: []model.Frontend{fe("fe_a", 80)}}
	many := model.Config{Frontends: []model.Frontend{fe("fe_a", 80)}}
	for i := range explainLimit + 2 {
		many.Frontends = append(many.Frontends, fe(fmt.Sprintf("fe_%d", i), uint16(1000+i)))
	}
	for _, c := range []struct {
		name      string
		cfg       model.Config
		want, not []string
	}{
		{"none new", running, []string{"no bind new"}, []string{"fe_a"}},
		{"one new", model.Config{Frontends: []model.Frontend{fe("fe_a", 80, 443)}}, []string{"fe_a 192.0.2.1:443"}, []string{":80"}},
		{"more than the limit", many, []string{"fe_0 192.0.2.1:1000", "fe_4 192.0.2.1:1004", "and 2 more"}, []string{"fe_5", ":80"}},
	} {
		got := newBinds(running, c.cfg)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.name, got, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: %q names %q, which runs already or is past the limit", c.name, got, n)
			}
		}
	}
}
