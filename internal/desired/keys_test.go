package desired

import (
	"testing"
	"unsafe"
)

// TestConfigSharesTheServiceKey: a Service's frontend and backend name it
// by the bytes of the pass's one key string, not a copy each (issue 29's
// peak: 2 x 16 B a Service kept), in a whole pass and a delta pass alike.
func TestConfigSharesTheServiceKey(t *testing.T) {
	in, extra := heldBack(bigInput(4, func(i int) []ep { return []ep{{ip: "192.168.0.1", node: "n1", ready: true, serving: true}} }))
	for _, step := range []string{"whole", "delta"} {
		var r Result
		if step == "delta" {
			r = deltaPass(t, &in, extra)
		} else {
			r = Compute(in, defaults())
		}
		if len(r.Config.Frontends) != len(in.Services) {
			t.Fatalf("%s: %d frontends", step, len(r.Config.Frontends))
		}
		for _, fe := range r.Config.Frontends {
			var be string
			for _, b := range r.Config.Backends {
				if b.Name == fe.Backend {
					be = b.Service
				}
			}
			if unsafe.StringData(fe.Service) != unsafe.StringData(be) {
				t.Errorf("%s: %s's frontend and backend hold two copies of %q", step, fe.Name, fe.Service)
			}
		}
	}
}
