package kubeapi

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// With sharing on, tests one after the other get one server, each seeing
// none of what the one before made; a second server in one test, a test
// with Options, and the test after one that stopped a part of the shared
// server each get one of their own.
func TestShared(t *testing.T) {
	shared.mu.Lock()
	shared.on = true
	shared.mu.Unlock()
	t.Cleanup(func() {
		shared.mu.Lock()
		defer shared.mu.Unlock()
		discard()
		shared.on = false
	})
	ctx := context.Background()
	urls := map[string]string{}
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}
	for _, name := range []string{"first", "second"} {
		step(name, func(t *testing.T) {
			s := Start(t)
			urls[name] = s.URL
			c := s.Client(t)
			if _, err := c.CoreV1().Namespaces().Get(ctx, "t1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("namespace t1 at the start: %v, want not found (the test before made it)", err)
			}
			if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t1"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
	if urls["first"] != urls["second"] {
		t.Errorf("two tests one after the other: %s and %s, want one shared server", urls["first"], urls["second"])
	}
	step("two in one test", func(t *testing.T) {
		a, b := Start(t), Start(t)
		if a.URL != urls["first"] || b.URL == a.URL {
			t.Errorf("servers %s and %s, want the shared %s and another", a.URL, b.URL, urls["first"])
		}
		if o := StartWithOptions(t, Options{APIServerArgs: []string{"--v=1"}}); o.URL == urls["first"] {
			t.Errorf("a test with Options got the shared server")
		}
		a.StopAPIServer()
	})
	step("after a stop", func(t *testing.T) {
		if s := Start(t); s.URL == urls["first"] {
			t.Errorf("the server whose apiserver a test stopped was shared on")
		}
	})
}
