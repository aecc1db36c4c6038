package ingress

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
)

// edit is one change between two passes, applied to in (its objects are
// replaced, never modified); r picks which object.
type edit struct {
	name  string
	apply func(in *Input, gone *Input, r *rand.Rand)
}

// newVersion is a copy of ing with the next resourceVersion, changed by f.
func newVersion(ing *netv1.Ingress, f func(*netv1.Ingress)) *netv1.Ingress {
	c := ing.DeepCopy()
	n, _ := strconv.Atoi(c.ResourceVersion)
	c.ResourceVersion = strconv.Itoa(n + 1)
	if f != nil {
		f(c)
	}
	return c
}

// pick is a random index of n (-1 when n is 0).
func pick(r *rand.Rand, n int) int {
	if n == 0 {
		return -1
	}
	return r.IntN(n)
}

// move moves a random object of from to the end of to (neither's array
// changed: a pass may still hold it).
func move[T any](from, to *[]T, r *rand.Rand) {
	if i := pick(r, len(*from)); i >= 0 {
		*to = append(slices.Clone(*to), (*from)[i])
		*from = slices.Delete(slices.Clone(*from), i, i+1)
	}
}

var memoEdits = []edit{
	{"same object, new version", func(in, _ *Input, r *rand.Rand) {
		if i := pick(r, len(in.Ingresses)); i >= 0 {
			in.Ingresses[i] = newVersion(in.Ingresses[i], nil)
		}
	}},
	{"same version, another copy", func(in, _ *Input, r *rand.Rand) {
		if i := pick(r, len(in.Ingresses)); i >= 0 {
			in.Ingresses[i] = in.Ingresses[i].DeepCopy()
		}
	}},
	{"unsupported annotation toggled", func(in, _ *Input, r *rand.Rand) {
		if i := pick(r, len(in.Ingresses)); i >= 0 {
			in.Ingresses[i] = newVersion(in.Ingresses[i], func(c *netv1.Ingress) {
				k := NginxPrefix + "x-memo-test"
				if _, ok := c.Annotations[k]; ok {
					delete(c.Annotations, k)
				} else {
					c.Annotations = map[string]string{k: "1"}
					for ak, av := range in.Ingresses[i].Annotations {
						c.Annotations[ak] = av
					}
				}
			})
		}
	}},
	{"snippet toggled (refused, last good kept)", func(in, _ *Input, r *rand.Rand) {
		if i := pick(r, len(in.Ingresses)); i >= 0 {
			in.Ingresses[i] = newVersion(in.Ingresses[i], func(c *netv1.Ingress) {
				k := NginxPrefix + "server-snippet"
				if _, ok := c.Annotations[k]; ok {
					delete(c.Annotations, k)
				} else {
					if c.Annotations == nil {
						c.Annotations = map[string]string{}
					}
					c.Annotations[k] = "deny all;"
				}
			})
		}
	}},
	{"path changed", func(in, _ *Input, r *rand.Rand) {
		if i := pick(r, len(in.Ingresses)); i >= 0 {
			in.Ingresses[i] = newVersion(in.Ingresses[i], func(c *netv1.Ingress) {
				for _, rule := range c.Spec.Rules {
					if rule.HTTP != nil && len(rule.HTTP.Paths) > 0 {
						rule.HTTP.Paths[0].Path += "x"
						return
					}
				}
			})
		}
	}},
	{"Ingress deleted", func(in, gone *Input, r *rand.Rand) {
		if i := pick(r, len(in.Ingresses)); i >= 0 {
			gone.Ingresses = append(gone.Ingresses, in.Ingresses[i])
			in.Ingresses = slices.Delete(slices.Clone(in.Ingresses), i, i+1)
		}
	}},
	{"Ingress back", func(in, gone *Input, r *rand.Rand) {
		if i := pick(r, len(gone.Ingresses)); i >= 0 {
			in.Ingresses = append(slices.Clone(in.Ingresses), newVersion(gone.Ingresses[i], nil))
			gone.Ingresses = slices.Delete(gone.Ingresses, i, i+1)
		}
	}},
	{"Service deleted", func(in, gone *Input, r *rand.Rand) { move(&in.Services, &gone.Services, r) }},
	{"Service back", func(in, gone *Input, r *rand.Rand) { move(&gone.Services, &in.Services, r) }},
	{"Service's ports renumbered", func(in, _ *Input, r *rand.Rand) {
		if i := pick(r, len(in.Services)); i >= 0 {
			c := in.Services[i].DeepCopy()
			for j := range c.Spec.Ports {
				c.Spec.Ports[j].Port ^= 1
			}
			in.Services = slices.Clone(in.Services)
			in.Services[i] = c
		}
	}},
	{"Service's port protocol UDP", func(in, _ *Input, r *rand.Rand) {
		if i := pick(r, len(in.Services)); i >= 0 && len(in.Services[i].Spec.Ports) > 0 {
			c := in.Services[i].DeepCopy()
			c.Spec.Ports[0].Protocol = corev1.ProtocolUDP
			in.Services = slices.Clone(in.Services)
			in.Services[i] = c
		}
	}},
	{"EndpointSlice's endpoints gone", func(in, _ *Input, r *rand.Rand) {
		if i := pick(r, len(in.Slices)); i >= 0 {
			c := *in.Slices[i]
			c.Endpoints = nil
			in.Slices = slices.Clone(in.Slices)
			in.Slices[i] = &c
		}
	}},
	{"EndpointSlice deleted", func(in, gone *Input, r *rand.Rand) { move(&in.Slices, &gone.Slices, r) }},
	{"EndpointSlice back", func(in, gone *Input, r *rand.Rand) { move(&gone.Slices, &in.Slices, r) }},
	{"nothing", func(*Input, *Input, *rand.Rand) {}},
}

// TestUnitMemoIsTheWholeCompile: after every edit of a random sequence,
// Compile with the per-Ingress memo gives what compiling every Ingress
// gives (the same memo of last good versions, its units forgotten), for
// each input of TestCompile; and the memo is used.
func TestUnitMemoIsTheWholeCompile(t *testing.T) {
	for _, tc := range []struct {
		input   string
		class   string
		secrets bool // every Ingress reads a Secret: none is memoised
	}{
		{"basic", "haproxy", false}, {"classes", "haproxy", false}, {"tls", "haproxy", false},
		{"canary", "haproxy", false}, {"annotations", "haproxy", false}, {"refused", "haproxy", false},
		{"www", "haproxy", false}, {"routing", "haproxy", false}, {"closing", "haproxy", false},
		{"access", "haproxy", false}, {"auth", "haproxy", true}, {"backendtls", "haproxy", true},
		{"cookie", "haproxy", false}, {"retry", "haproxy", false}, {"migrate", "haproxy-k8s-sync", false},
		{"passthrough", "haproxy", false}, {"oauth", "haproxy", false},
	} {
		t.Run(tc.input, func(t *testing.T) {
			in := load(t, tc.input)
			for i, ing := range in.Ingresses {
				c := ing.DeepCopy()
				c.ResourceVersion = "1"
				in.Ingresses[i] = c
			}
			memo, whole := &Memo{}, &Memo{}
			r := rand.New(rand.NewPCG(33, uint64(len(tc.input))))
			var gone Input
			for step := range 120 {
				e := memoEdits[r.IntN(len(memoEdits))]
				if step > 0 {
					e.apply(&in, &gone, r)
				}
				whole.units, whole.pass = nil, nil
				want := Compile(in, Options{Class: tc.class, Addresses: lb, Last: whole})
				got := Compile(in, Options{Class: tc.class, Addresses: lb, Last: memo})
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d (%s): the memo's result\n%s\ncompiling every Ingress\n%s", step, e.name, dump(got), dump(want))
				}
			}
			if (memo.hits == 0) != tc.secrets || whole.hits != 0 {
				t.Fatalf("%d Ingresses not compiled again with the memo, %d without: want some (none when every Ingress reads a Secret), none", memo.hits, whole.hits)
			}
		})
	}
}
