package source

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/kubeclient"
)

// TestFirstListsStreamOnlyTheLargeKinds: with client-go's WatchListClient
// as run sets it by default or from KUBE_FEATURE_WatchListClient=true
// (kubeclient.WatchListFromEnv), the Services'
// and EndpointSlices' informers read their first list as a watch of the
// initial events (each object slimmed as it arrives: the start's peak
// memory, issue 29) and every other informer of the Services mode lists
// plainly (the start's time). The stand-in apiserver answers nothing: the
// informers' first requests are all it sees.
func TestFirstListsStreamOnlyTheLargeKinds(t *testing.T) {
	if err := kubeclient.WatchListFromEnv(func(string) string { return "true" }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kubeclient.WatchListFromEnv(func(string) string { return "" }) })
	want := map[string]bool{ // path: streamed
		"/api/v1/services":                                true,
		"/apis/discovery.k8s.io/v1/endpointslices":        true,
		"/api/v1/nodes":                                   false,
		"/api/v1/namespaces":                              false,
		"/apis/haproxy-k8s-sync.io/v1alpha1/addresspools": false,
		"/apis/gateway.networking.k8s.io/v1/gateways":     false,
		"/apis/networking.k8s.io/v1/ipaddresses":          false,
	}
	var mu sync.Mutex
	first := map[string]bool{} // path: streamed
	all := make(chan struct{}) // closed once every path in want was asked
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		if _, seen := first[r.URL.Path]; !seen {
			first[r.URL.Path] = q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true"
			if len(first) >= len(want) {
				select {
				case <-all:
				default:
					close(all)
				}
			}
		}
		mu.Unlock()
		select { // an apiserver that answers nothing
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop)
	cfg := &rest.Config{Host: srv.URL}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := New(client, "")
	src.WithPools(dyn)
	src.WithGateways()
	src.WithClaims()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = src.Start(ctx, 30*time.Second) }()
	select {
	case <-all:
	case <-time.After(20 * time.Second):
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("first requests (path: streamed): %v", first)
	for path, streamed := range want {
		got, ok := first[path]
		switch {
		case !ok:
			t.Errorf("%s: no request within 20 s (asked: %v)", path, first)
		case got != streamed:
			t.Errorf("%s: first list streamed %v, want %v", path, got, streamed)
		}
	}
}
