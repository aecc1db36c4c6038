package ingress

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
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
	{"status written to many Ingresses (more than a patch takes), one with its spec changed too", func(in, _ *Input, r *rand.Rand) {
		in.Ingresses = slices.Clone(in.Ingresses)
		for range 2 * maxPatch {
			i := pick(r, len(in.Ingresses))
			in.Ingresses[i] = statusWritten(in.Ingresses[i], r.IntN(250))
		}
		i := pick(r, len(in.Ingresses))
		in.Ingresses[i] = newVersion(in.Ingresses[i], func(c *netv1.Ingress) {
			c.Status.LoadBalancer.Ingress = []netv1.IngressLoadBalancerIngress{{IP: "192.0.2.99"}}
			c.Spec.Rules[0].Host = fmt.Sprintf("h%d.example.com", r.IntN(12))
		})
	}},
	{"custom headers toggled (response header names: the table's shape)", func(in, _ *Input, r *rand.Rand) {
		i := pick(r, len(in.Ingresses))
		in.Ingresses = slices.Clone(in.Ingresses)
		in.Ingresses[i] = newVersion(in.Ingresses[i], func(c *netv1.Ingress) {
			if _, on := c.Annotations[customHeadersKey]; on && r.IntN(2) == 0 {
				delete(c.Annotations, customHeadersKey)
			} else {
				c.Annotations[customHeadersKey] = fmt.Sprintf("hdrs-%d", r.IntN(3))
			}
		})
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
			in := passMemoInput() // hashmemo_test.go
			opts := Options{Class: "haproxy", Addresses: []netip.Addr{netip.MustParseAddr("192.0.2.10")}}
			memo, whole := &Memo{}, &Memo{}
			r := rand.New(rand.NewPCG(33, seed))
			var gone Input
			var lastShape *model.HTTPShape
			reshaped := 0 // patched passes whose HTTP table has another Shape than the last pass's
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
				if d := shapeDiff(got); d != "" {
					t.Fatalf("step %d (%s, patched %v): %s", step, e.name, memo.Whole() == "", d)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d (%s): the memo's result\n%s\ncompiling every Ingress\n%s", step, e.name, dump(got), dump(want))
				}
				if p := memo.Whole() == ""; p && len(got.Frontends) > 0 && got.Frontends[0].HTTP.KeptShape() != lastShape {
					reshaped++
				}
				if len(got.Frontends) > 0 {
					lastShape = got.Frontends[0].HTTP.KeptShape()
				}
			}
			if reshaped == 0 {
				t.Error("no patched pass changed its table's shape")
			}
			if memo.patched < 40 || whole.patched != 0 {
				t.Fatalf("%d of 300 passes patched with the memo, %d without: want most, none", memo.patched, whole.patched)
			}
			t.Logf("%d of 300 passes patched, %d of them with a new shape", memo.patched, reshaped)
		})
	}
}

// headerConfigMaps are n ConfigMaps hdrs-<i> of custom headers, a
// response header x-h<i> each.
func headerConfigMaps(n int) map[Key]*corev1.ConfigMap {
	out := map[Key]*corev1.ConfigMap{}
	for i := range n {
		name := fmt.Sprintf("hdrs-%d", i)
		out[Key{"default", name}] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: "1"},
			Data: map[string]string{fmt.Sprintf("x-h%d", i): "v"}}
	}
	return out
}

// shapeDiff is "" when every table of res carries the Shape its hosts
// and actions give (model.ShapeOf), in its very form; else which differs.
func shapeDiff(res Result) string {
	for _, f := range res.Frontends {
		if f.HTTP.KeptShape() == nil {
			return "frontend " + f.Name + "'s table has no Shape"
		}
		if s := model.ShapeOf(f.HTTP); !reflect.DeepEqual(*f.HTTP.KeptShape(), s) {
			return fmt.Sprintf("frontend %s's table's shape:\nkept:     %+v\nof table: %+v", f.Name, *f.HTTP.KeptShape(), s)
		}
	}
	return ""
}

// statusWritten is ing with its status written (a new object and
// resourceVersion, nothing a compile reads).
func statusWritten(ing *netv1.Ingress, n int) *netv1.Ingress {
	return newVersion(ing, func(c *netv1.Ingress) {
		c.Status.LoadBalancer.Ingress = []netv1.IngressLoadBalancerIngress{{IP: fmt.Sprintf("192.0.2.%d", n)}}
	})
}

// TestPassMemoTakesStatusWrites: a pass after the status of more
// Ingresses than a patch changes was written (as the writers do after a
// start, at --status-qps) and one Ingress was added is patched, and is
// what compiling every Ingress gives; an annotation or spec changed with
// the status is compiled again.
func TestPassMemoTakesStatusWrites(t *testing.T) {
	tests := []struct {
		name      string
		also      func(*netv1.Ingress) // changed beside the status, on every restated Ingress but the first
		wantPatch bool
	}{
		{"status only", nil, true},
		{"an annotation too", func(c *netv1.Ingress) { c.Annotations[NginxPrefix+"ssl-redirect"] = "false" }, false},
		{"a path too", func(c *netv1.Ingress) { c.Spec.Rules[0].HTTP.Paths[0].Path = "/moved" }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := benchInput(100)
			opts := Options{Class: "haproxy", Addresses: []netip.Addr{netip.MustParseAddr("192.0.2.10")}}
			memo := &Memo{}
			opts.Last = memo
			Compile(in, opts)
			in.Ingresses = slices.Clone(in.Ingresses)
			for i := range 3 * maxPatch {
				in.Ingresses[i] = statusWritten(in.Ingresses[i], i)
				if tc.also != nil && i > 0 {
					in.Ingresses[i] = newVersion(in.Ingresses[i], tc.also)
				}
			}
			in.Ingresses = append(in.Ingresses, newVersion(in.Ingresses[len(in.Ingresses)-1], func(c *netv1.Ingress) {
				c.Name, c.Spec.Rules[0].Host = "added", "added.example.com"
			}))
			got := Compile(in, opts)
			if patched := memo.patched == 1; patched != tc.wantPatch {
				t.Errorf("patched %v (whole: %q), want %v", patched, memo.Whole(), tc.wantPatch)
			}
			if want := Compile(in, Options{Class: opts.Class, Addresses: opts.Addresses}); !reflect.DeepEqual(got, want) {
				t.Fatalf("the memo's result\n%s\ncompiling every Ingress\n%s", dump(got), dump(want))
			}
			// The next pass, with nothing changed, is patched from this one.
			before := memo.patched
			if Compile(in, opts); memo.patched != before+1 {
				t.Errorf("the pass after was not patched: %q", memo.Whole())
			}
		})
	}
}
