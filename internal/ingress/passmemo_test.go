package ingress

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	netv1 "k8s.io/api/networking/v1"
)

// passEdits are edits a patched pass takes (and a few it must not),
// beside memoEdits, on benchInput's world.
var passEdits = []edit{
	{"new Ingress", func(in, _ *Input, r *rand.Rand) {
		c := newVersion(in.Ingresses[pick(r, len(in.Ingresses))], func(c *netv1.Ingress) {
			c.Name = fmt.Sprintf("new-%d", r.IntN(1000))
			c.Spec.Rules[0].Host = fmt.Sprintf("h%d.example.com", r.IntN(12))
		})
		if !slices.ContainsFunc(in.Ingresses, func(i *netv1.Ingress) bool { return i.Name == c.Name }) {
			in.Ingresses = append(slices.Clone(in.Ingresses), c)
		}
	}},
	{"moved to another Service", func(in, _ *Input, r *rand.Rand) {
		i, svc := pick(r, len(in.Ingresses)), in.Services[pick(r, len(in.Services))].Name
		in.Ingresses = slices.Clone(in.Ingresses)
		in.Ingresses[i] = newVersion(in.Ingresses[i], func(c *netv1.Ingress) {
			for _, rule := range c.Spec.Rules {
				if rule.HTTP != nil && len(rule.HTTP.Paths) > 0 {
					rule.HTTP.Paths[r.IntN(len(rule.HTTP.Paths))].Backend.Service.Name = svc
				}
			}
		})
	}},
	{"host renamed", func(in, _ *Input, r *rand.Rand) {
		i := pick(r, len(in.Ingresses))
		in.Ingresses = slices.Clone(in.Ingresses)
		in.Ingresses[i] = newVersion(in.Ingresses[i], func(c *netv1.Ingress) {
			if len(c.Spec.Rules) > 0 {
				c.Spec.Rules[0].Host = fmt.Sprintf("h%d.example.com", r.IntN(12))
			}
		})
	}},
	{"path added", func(in, _ *Input, r *rand.Rand) {
		i := pick(r, len(in.Ingresses))
		in.Ingresses = slices.Clone(in.Ingresses)
		in.Ingresses[i] = newVersion(in.Ingresses[i], func(c *netv1.Ingress) {
			if len(c.Spec.Rules) > 0 && c.Spec.Rules[0].HTTP != nil {
				p := c.Spec.Rules[0].HTTP.Paths[0]
				p.Path = fmt.Sprintf("/p%d", r.IntN(5))
				c.Spec.Rules[0].HTTP.Paths = append(c.Spec.Rules[0].HTTP.Paths, p)
			}
		})
	}},
	{"canaries and snippets dropped (a patched pass may follow again)", func(in, _ *Input, _ *rand.Rand) {
		in.Ingresses = slices.Clone(in.Ingresses)
		for i, ing := range in.Ingresses {
			if ing.Annotations[NginxPrefix+"canary"] != "" || ing.Annotations[NginxPrefix+"server-snippet"] != "" {
				in.Ingresses[i] = newVersion(ing, func(c *netv1.Ingress) {
					delete(c.Annotations, NginxPrefix+"canary")
					delete(c.Annotations, NginxPrefix+"server-snippet")
				})
			}
		}
	}},
	{"annotation toggled (ssl-redirect, force-ssl-redirect, canary, default backend)", func(in, _ *Input, r *rand.Rand) {
		i := pick(r, len(in.Ingresses))
		k := NginxPrefix + []string{"ssl-redirect", "force-ssl-redirect", "canary", "app-root"}[r.IntN(4)]
		in.Ingresses = slices.Clone(in.Ingresses)
		in.Ingresses[i] = newVersion(in.Ingresses[i], func(c *netv1.Ingress) {
			switch {
			case r.IntN(5) == 0:
				c.Spec.DefaultBackend = c.Spec.Rules[0].HTTP.Paths[0].Backend.DeepCopy()
			case c.Annotations[k] != "":
				delete(c.Annotations, k)
			case k == NginxPrefix+"app-root":
				c.Annotations[k] = "/app"
			default:
				c.Annotations[k] = "true"
			}
		})
	}},
}

// TestPassMemoIsTheWholeCompile: after every edit of a random sequence
// on 40 Ingresses (hosts shared, a TLS host, a default backend), Compile
// with the memos gives what compiling every Ingress from nothing gives,
// and most passes were patched.
func TestPassMemoIsTheWholeCompile(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			in := benchInput(40)
			for i, ing := range in.Ingresses {
				in.Ingresses[i] = newVersion(ing, func(c *netv1.Ingress) {
					c.ResourceVersion = "1"
					c.Spec.Rules[0].Host = fmt.Sprintf("h%d.example.com", i%12) // hosts shared
					if i == 7 {
						c.Spec.DefaultBackend = c.Spec.Rules[0].HTTP.Paths[0].Backend.DeepCopy()
					}
					if i == 9 {
						c.Spec.TLS = []netv1.IngressTLS{{Hosts: []string{c.Spec.Rules[0].Host}}}
					}
				})
			}
			opts := Options{Class: "haproxy", Addresses: []netip.Addr{netip.MustParseAddr("192.0.2.10")}}
			memo, whole := &Memo{}, &Memo{}
			r := rand.New(rand.NewPCG(33, seed))
			var gone Input
			edits := slices.Concat(memoEdits, passEdits, passEdits)
			for step := range 300 {
				e := edits[r.IntN(len(edits))]
				if step > 0 {
					e.apply(&in, &gone, r)
				}
				whole.units, whole.pass = nil, nil
				opts.Last = whole
				want := Compile(in, opts)
				opts.Last = memo
				got := Compile(in, opts)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d (%s): the memo's result\n%s\ncompiling every Ingress\n%s", step, e.name, dump(got), dump(want))
				}
			}
			if memo.patched < 40 || whole.patched != 0 {
				t.Fatalf("%d of 300 passes patched with the memo, %d without: want most, none", memo.patched, whole.patched)
			}
			t.Logf("%d of 300 passes patched", memo.patched)
		})
	}
}
