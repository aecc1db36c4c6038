package tproxy

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	"github.com/google/nftables"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// manyPorts is a model of n ports on one IPv4 and one IPv6 address (2n
// set elements), from port first on.
func manyPorts(n int, first uint16) model.Config {
	var cfg model.Config
	a4, a6 := netip.MustParseAddr("203.0.113.10"), netip.MustParseAddr("2001:db8:1::10")
	for i := range n {
		p := first + uint16(i)
		cfg.Frontends = append(cfg.Frontends, model.Frontend{Name: fmt.Sprintf("fe_%d", p), Backend: "be_a",
			Binds: []model.Bind{{Addr: a4, Port: p}, {Addr: a6, Port: p}}})
	}
	return cfg
}

// The kernel takes a set's elements in messages of at most 64 KiB (an
// attribute's length is 16 bits) and a batch no larger than the socket's
// send buffer: 10,000 ports per family (20,000 elements, ~520 KB) go in
// several messages and batches, and come back whole; half of them go
// away the same way. One message per family failed from ~3,300 IPv4 or
// ~2,000 IPv6 elements (netlink receive: no such file or directory).
func TestManyElements(t *testing.T) {
	lab := netlab.New(t, 0)
	d, err := New(Options{NetNS: netlab.Path(lab.LB), Render: tproxyOpts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		n         int
		first     uint16
		wantTotal int
	}{
		{"10000 ports", 10000, 20000, 20000},
		{"5000 of them gone, 5000 new", 10000, 25000, 20000},
		{"down to 100", 100, 1000, 200},
		{"none", 0, 0, 0},
		{"10000 again", 10000, 40000, 20000},
	} {
		cfg := manyPorts(c.n, c.first)
		if _, err := d.Apply(ctx, cfg); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		// A fresh driver reads the kernel's sets back.
		d2, err := New(Options{NetNS: netlab.Path(lab.LB), Render: tproxyOpts})
		if err != nil {
			t.Fatal(err)
		}
		got := d2.readBack()
		d2.Close()
		v4, v6 := Elements(cfg, tproxyOpts)
		if len(got) != c.wantTotal || len(v4)+len(v6) != c.wantTotal {
			t.Fatalf("%s: the kernel holds %d elements, the model %d, want %d", c.name, len(got), len(v4)+len(v6), c.wantTotal)
		}
		for _, e := range append(v4, v6...) {
			if !got[e] {
				t.Fatalf("%s: %s not in the kernel's set", c.name, e)
			}
		}
		// Nothing to do the second time.
		if res, err := d.Apply(ctx, cfg); err != nil || res.Ops != 0 {
			t.Fatalf("%s: again: %d ops, %v; want 0", c.name, res.Ops, err)
		}
	}
}

// Every message stays under an attribute's 16-bit length, every batch
// under the socket's send buffer, deletions come first, and nothing is
// lost or repeated.
func TestBatches(t *testing.T) {
	els := func(n int) []nftables.SetElement {
		out := make([]nftables.SetElement, n)
		for i := range out {
			out[i].Key = []byte{byte(i >> 8), byte(i)}
		}
		return out
	}
	for _, c := range []struct {
		name       string
		del, add   [2][]nftables.SetElement
		wantBatchs int
	}{
		{"nothing", [2][]nftables.SetElement{}, [2][]nftables.SetElement{}, 0},
		{"one", [2][]nftables.SetElement{}, [2][]nftables.SetElement{els(1)}, 1},
		{"3,277 IPv4 (one message refused)", [2][]nftables.SetElement{}, [2][]nftables.SetElement{els(3277)}, 1},
		{"2,048 IPv6 (one message refused)", [2][]nftables.SetElement{}, [2][]nftables.SetElement{nil, els(2048)}, 1},
		{"10,000 of each", [2][]nftables.SetElement{}, [2][]nftables.SetElement{els(10000), els(10000)}, 6},
		{"deleted and added", [2][]nftables.SetElement{els(5000), els(5000)}, [2][]nftables.SetElement{els(5000), els(5000)}, 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			bs := batches(c.del, c.add)
			if len(bs) != c.wantBatchs {
				t.Errorf("%d batches, want %d", len(bs), c.wantBatchs)
			}
			var seen [2][2]int // [del?][family]
			added := false
			for _, b := range bs {
				size := 0
				for _, op := range b {
					n := len(op.els) * elemBytes(op.v6)
					if n > 65535-4 || n > maxMsgBytes {
						t.Errorf("a message of %d bytes of elements", n)
					}
					size += n
					if op.del && added {
						t.Errorf("a deletion after an addition")
					}
					added = added || !op.del
					d, f := 0, 0
					if op.del {
						d = 1
					}
					if op.v6 {
						f = 1
					}
					seen[d][f] += len(op.els)
				}
				if size > maxBatchBytes || size > 212992/2 {
					t.Errorf("a batch of %d bytes of elements", size)
				}
			}
			for f := range 2 {
				if seen[1][f] != len(c.del[f]) || seen[0][f] != len(c.add[f]) {
					t.Errorf("family %d: %d deleted, %d added; want %d, %d", f, seen[1][f], seen[0][f], len(c.del[f]), len(c.add[f]))
				}
			}
		})
	}
}
