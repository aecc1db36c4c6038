package kubeclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestPreferListsInformerLists: once PreferLists ran, an informer's first
// request is a plain list, not client-go's default watch of the initial
// events (sendInitialEvents=true), which made a fresh start at 10,000
// Services wait 0.2-0.5 s longer for its caches.
func TestPreferListsInformerLists(t *testing.T) {
	PreferLists(func(string) string { return "" })
	first := make(chan *http.Request, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case first <- r:
		default:
		}
		q := r.URL.Query()
		if q.Get("watch") == "true" {
			<-r.Context().Done() // a watch that sends nothing
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"ServiceList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`))
	}))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	f := informers.NewSharedInformerFactory(client, 0)
	f.Core().V1().Services().Informer()
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); f.Shutdown() }()
	f.Start(ctx.Done())
	select {
	case r := <-first:
		q := r.URL.Query()
		if q.Get("watch") == "true" || q.Get("sendInitialEvents") != "" {
			t.Fatalf("first request %s: a watch of the initial events, want a plain list", r.URL.RequestURI())
		}
		if r.URL.Path != "/api/v1/services" {
			t.Fatalf("first request %s: want the Services' list", r.URL.RequestURI())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no request from the informer within 10 s")
	}
}

// TestListGates: the gates PreferLists installs differ from client-go's
// in WatchListClient alone; with client-go's variable set, the choice is
// the user's (gatesFor keeps client-go's gates).
func TestListGates(t *testing.T) {
	base := fixedGates{features.WatchListClient: true, features.InformerResourceVersion: true}
	for _, c := range []struct {
		name          string
		env           string
		watchList, rv bool
	}{
		{"default", "", false, true},
		{"env set", "true", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := gatesFor(func(k string) string {
				if k == watchListEnv {
					return c.env
				}
				return ""
			}, base)
			if got := g.Enabled(features.WatchListClient); got != c.watchList {
				t.Errorf("WatchListClient %v, want %v", got, c.watchList)
			}
			if got := g.Enabled(features.InformerResourceVersion); got != c.rv {
				t.Errorf("InformerResourceVersion %v, want %v", got, c.rv)
			}
		})
	}
}

type fixedGates map[features.Feature]bool

func (g fixedGates) Enabled(f features.Feature) bool { return g[f] }
