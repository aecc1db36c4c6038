package kubeclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
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
	if err := PreferLists(func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
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

// TestPreferListsSetsTheGate: WatchListClient is off unless the
// command's environment sets client-go's variable, whose value then
// decides; a value that is no boolean is refused, naming the variable.
func TestPreferListsSetsTheGate(t *testing.T) {
	for _, c := range []struct {
		env     string
		want    bool
		refused bool
	}{
		{"", false, false},
		{"true", true, false},
		{"1", true, false},
		{"false", false, false},
		{"maybe", false, true},
	} {
		t.Run(c.env, func(t *testing.T) {
			g := setGates{}
			err := preferLists(func(k string) string {
				if k == watchListEnv {
					return c.env
				}
				return ""
			}, g)
			if c.refused {
				if err == nil || !strings.Contains(err.Error(), watchListEnv) {
					t.Fatalf("%s=%q: %v, want an error naming the variable", watchListEnv, c.env, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := g[features.WatchListClient]; !ok || got != c.want || len(g) != 1 {
				t.Errorf("%s=%q: gates set %v, want only WatchListClient %v", watchListEnv, c.env, g, c.want)
			}
		})
	}
	if _, ok := features.FeatureGates().(settable); !ok {
		t.Errorf("client-go's default gates %T take no Set: PreferLists would do nothing", features.FeatureGates())
	}
}

type setGates map[features.Feature]bool

func (g setGates) Set(f features.Feature, on bool) error { g[f] = on; return nil }
