package gatewayctl

import (
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

func TestAppliedBook(t *testing.T) {
	var published, then []string
	b := newAppliedBook([]string{"a", "b"}, func(r gateway.Result) { published = append(published, r.Config.Frontends[0].Name) })
	result := func(name string) gateway.Result {
		return gateway.Result{Config: model.Config{Frontends: []model.Frontend{{Name: name}}}}
	}
	m1, m2, m3 := result("m1"), result("m2"), result("m3")
	// then: the Ingresses' part of each pass (ingressctl's AppliedLater),
	// called with its result's publishing, never with another's.
	later := func(name string) func() { return func() { then = append(then, name) } }
	b.computed(m1, later("m1"))
	b.applied("a", m1.Config)
	if len(published) != 0 {
		t.Fatalf("published before b applied: %v", published)
	}
	copied := m1.Config // as driver.Instances hands it: a copy of the struct
	copied.Changes = nil
	b.applied("b", copied)
	b.computed(m2, later("m2"))
	b.computed(m3, later("m3"))
	b.applied("a", m2.Config)
	b.applied("b", m3.Config) // b skipped m2
	if len(published) != 1 {
		t.Fatalf("published %v while a and b applied different models", published)
	}
	b.applied("a", m3.Config)
	if want := []string{"m1", "m3"}; len(published) != 2 || published[1] != "m3" {
		t.Fatalf("published %v, want %v", published, want)
	}
	if want := "m1 m3"; strings.Join(then, " ") != want {
		t.Errorf("the Beside told %v, want %s", then, want)
	}
}
