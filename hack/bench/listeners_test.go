package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
)

func TestParseListeners(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"ports", []string{"ports"}},
		{"tproxy", []string{"tproxy"}},
		{"tproxy,ports", []string{"tproxy", "ports"}},
		{" ports , tproxy", []string{"ports", "tproxy"}},
		{"ports,ports", nil},
		{"tproxy,pool", nil},
		{"", nil},
	} {
		got, err := parseListeners(c.in)
		if (err != nil) != (c.want == nil) || !slices.Equal(got, c.want) {
			t.Errorf("parseListeners(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

// In tproxy mode a Service's backend runs as the spare pool.json names;
// the file is read again when it changes (a Service moved, a new one
// placed), and a backend it does not name is looked for under its own
// name.
func TestHAProxyNameFromPool(t *testing.T) {
	dir := t.TempDir()
	pool := filepath.Join(dir, "pool.json")
	write := func(at time.Time, occupants ...string) {
		t.Helper()
		s := spares.State{Classes: []model.Backend{{}}}
		for i, o := range occupants {
			s.Spares = append(s.Spares, spares.Spare{Name: "_pool_" + string(rune('1'+i)), Occupant: o})
		}
		f, err := os.Create(pool)
		if err != nil {
			t.Fatal(err)
		}
		if err := spares.Encode(f, s); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Chtimes(pool, at, at); err != nil {
			t.Fatal(err)
		}
	}
	ports := &observer{}
	if got := ports.haproxyName("be_a"); got != "be_a" {
		t.Errorf("ports mode: %q, want be_a", got)
	}
	o := &observer{pool: pool}
	if got := o.haproxyName("be_a"); got != "be_a" {
		t.Errorf("no pool.json yet: %q, want be_a", got)
	}
	t0 := time.Now().Add(-time.Hour)
	write(t0, "be_a", "be_b")
	if got := o.haproxyName("be_b"); got != "_pool_2" {
		t.Errorf("be_b: %q, want _pool_2", got)
	}
	write(t0.Add(time.Second), "", "be_b", "be_a") // be_a moved
	names := o.haproxyNames(slices.Values([]string{"be_a", "be_b", "be_c"}))
	if names["be_a"] != "_pool_3" || names["be_b"] != "_pool_2" || names["be_c"] != "be_c" {
		t.Errorf("after the move: %v, want be_a _pool_3, be_b _pool_2, be_c itself", names)
	}
}
