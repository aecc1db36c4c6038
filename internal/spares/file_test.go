package spares

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/liveheap"
)

func TestFileRoundTrip(t *testing.T) {
	cfg := cfgOf(be("a", 0), be("b", time.Minute))
	occ, waiting := Occupy(State{}, cfg)
	s, _ := Grow(occ, cfg, waiting, Policy{Spares: 2, Other: 1, LowWater: 1})
	var buf bytes.Buffer
	if err := Encode(&buf, s); err != nil {
		t.Fatal(err)
	}
	got, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("read back %+v, wrote %+v", got, s)
	}
	if r := Restore(got, cfg); !reflect.DeepEqual(r, s) {
		t.Errorf("Restore of the same model changed the pool: %+v", r)
	}
	if again, w := Occupy(Restore(got, cfg), cfg); len(w) > 0 || !slices.Equal(occupants(again), occupants(s)) {
		t.Errorf("a restart moved backends: %v, was %v", occupants(again), occupants(s))
	}
}

func TestDecodeRefuses(t *testing.T) {
	for _, tc := range []struct{ name, in, err string }{
		{"not JSON", `{`, "pool file"},
		{"a name that is not a spare's", `{"classes":[{}],"spares":[{"name":"web","class":0}]}`, "not a spare's name"},
		{"out of order", `{"classes":[{}],"spares":[{"name":"_pool_2","class":0},{"name":"_pool_1","class":0}]}`, "out of order"},
		{"an unknown class", `{"classes":[{}],"spares":[{"name":"_pool_0","class":1}]}`, "does not have"},
		{"two spares, one occupant", `{"classes":[{}],"spares":[{"name":"_pool_0","class":0,"occupant":"a"},{"name":"_pool_1","class":0,"occupant":"a"}]}`, "two spares"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("err = %v, want %q", err, tc.err)
			}
		})
	}
}

// TestRestoreTakesSettingsFromTheModel: a class only the file has is
// dropped with its spares, and a class's settings are the model's, so a
// file written by hand cannot put settings into haproxy.cfg.
func TestRestoreTakesSettingsFromTheModel(t *testing.T) {
	in := `{"classes":[{"Balance":"roundrobin"},{"Balance":"roundrobin\n\tbind :1"}],
	"spares":[{"name":"_pool_0","class":1,"occupant":"b"},{"name":"_pool_1","class":0,"occupant":"gone"},{"name":"_pool_2","class":0,"occupant":"a"}]}`
	s, err := Decode(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	r := Restore(s, cfgOf(be("a", 0), be("b", 0)))
	if len(r.Classes) != 1 || r.Classes[0].Balance != "roundrobin" {
		t.Errorf("classes %+v", r.Classes)
	}
	if got, want := occupants(r), []string{"_pool_1=", "_pool_2=a"}; !slices.Equal(got, want) {
		t.Errorf("spares %v, want %v", got, want)
	}
	if Restore(s, model.Config{}).Spares != nil {
		t.Error("an empty model kept spares")
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(`{"classes":[{}],"spares":[{"name":"_pool_0","class":0,"occupant":"a"}]}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Decode(strings.NewReader(in))
		if err != nil {
			return
		}
		r := Restore(s, cfgOf(be("a", 0)))
		v := View(r, cfgOf(be("a", 0)))
		for _, b := range v.Backends {
			if b.Balance != "roundrobin" && b.Name != model.NodesBackend {
				t.Fatalf("a setting from the file reached the view: %+v", b)
			}
		}
	})
}

// TestEncodeMemoRandomEdits: pass after pass of random changes to a pool
// (a spare taken, given back, resized, the pool grown, a class added,
// a spare removed: another at each place), the memo's bytes are Encode's,
// and only the spares that changed are encoded again.
func TestEncodeMemoRandomEdits(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 8))
	s := State{Classes: []model.Backend{{Balance: "roundrobin"}}}
	for i := range 20 {
		s.Spares = append(s.Spares, Spare{Name: SpareName(i)})
	}
	var m EncodeMemo
	for pass := range 300 {
		s = s.Clone()
		changed := 1
		switch i := r.IntN(len(s.Spares)); r.IntN(6) {
		case 0:
			s.Spares[i].Occupant = fmt.Sprintf("svc-%d", pass)
		case 1:
			s.Spares[i].Occupant = ""
		case 2:
			s.Spares[i].Slots = 16
		case 3:
			n, _ := SpareIndex(s.Spares[len(s.Spares)-1].Name)
			s.Spares = append(s.Spares, Spare{Name: SpareName(n + 1), Occupant: "<&>"})
		case 4:
			s.Classes = append(s.Classes, model.Backend{Balance: "source", TimeoutServer: time.Duration(pass)})
			changed = 0
		case 5:
			s.Spares = slices.Delete(s.Spares, i, i+1)
			changed = len(s.Spares) - i
		}
		before := m.encoded
		got, err := m.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := Encode(&want, s); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("pass %d: memo\n%s\nEncode\n%s", pass, got, want.Bytes())
		}
		if n := m.encoded - before; pass > 0 && n > changed {
			t.Fatalf("pass %d: %d spares encoded, at most %d changed", pass, n, changed)
		}
	}
}

// TestEncodeMemoKeepsOnlyItsOutput: what the memo keeps beside the
// output it returned (which the driver keeps anyway, as the bytes last
// written) and the pool it was given (the driver's) is a few bytes a
// spare: not each spare's JSON again (issue 29's peak: ~2.4 MB at 20,000
// spares), nor a copy of the spares (48 bytes each, ~1 MB), after a
// first encode and after one with a spare changed.
func TestEncodeMemoKeepsOnlyItsOutput(t *testing.T) {
	const n = 20000
	s := State{Classes: []model.Backend{{Balance: "roundrobin"}}}
	for i := range n {
		s.Spares = append(s.Spares, Spare{Name: SpareName(i), Occupant: fmt.Sprintf("be_default_svc-%05d_%d", i, 20000+i), Slots: 8})
	}
	for _, change := range []bool{false, true} {
		if change {
			s = s.Clone()
			s.Spares[n/2].Occupant = ""
		}
		var m *EncodeMemo
		var out []byte
		kept := liveheap.Growth(func() {
			m = &EncodeMemo{}
			var err error
			if out, err = m.Encode(s); err != nil {
				t.Fatal(err)
			}
			if change { // the second encode copies all but one spare
				if out, err = m.Encode(s); err != nil {
					t.Fatal(err)
				}
			}
		})
		// Where each spare's JSON ends (4 bytes each) and a few more.
		t.Logf("change %v: kept %d bytes beside a %d-byte output", change, kept, len(out))
		if limit := int64(len(out)) + n*16; kept > limit {
			t.Errorf("change %v: the memo and its %d-byte output keep %d bytes, want at most %d", change, len(out), kept, limit)
		}
		runtime.KeepAlive(m)
	}
}
