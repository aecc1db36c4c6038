package kubeclient

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gwinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"
)

// TestWatchListFromEnvInformerLists: once WatchListFromEnv ran with the
// variable true, an informer made from a client as it is reads its first list as a
// watch of the initial events (sendInitialEvents=true: each object put
// through the transform as it arrives, the start's peak memory), and one
// made from a client wrapped by PlainLists* asks a plain list (the
// start's time: a fresh start at 10,000 Services waited 0.2-0.5 s longer
// for its caches streamed).
func TestWatchListFromEnvInformerLists(t *testing.T) {
	if err := WatchListFromEnv(func(string) string { return "true" }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = WatchListFromEnv(func(string) string { return "" }) })
	for _, c := range []struct {
		name     string
		path     string
		streamed bool
		start    func(cfg *rest.Config, stop <-chan struct{}) error
	}{
		{"kube", "/api/v1/services", true, func(cfg *rest.Config, stop <-chan struct{}) error {
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			f := informers.NewSharedInformerFactory(client, 0)
			f.Core().V1().Services().Informer()
			f.Start(stop)
			return nil
		}},
		{"kube plain", "/api/v1/services", false, func(cfg *rest.Config, stop <-chan struct{}) error {
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			f := informers.NewSharedInformerFactory(PlainLists(client), 0)
			f.Core().V1().Services().Informer()
			f.Start(stop)
			return nil
		}},
		{"dynamic plain", "/apis/example.com/v1/things", false, func(cfg *rest.Config, stop <-chan struct{}) error {
			client, err := dynamic.NewForConfig(cfg)
			if err != nil {
				return err
			}
			f := dynamicinformer.NewDynamicSharedInformerFactory(PlainListsDynamic(client), 0)
			f.ForResource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "things"}).Informer()
			f.Start(stop)
			return nil
		}},
		{"gateway plain", "/apis/gateway.networking.k8s.io/v1/gateways", false, func(cfg *rest.Config, stop <-chan struct{}) error {
			client, err := gwclient.NewForConfig(cfg)
			if err != nil {
				return err
			}
			f := gwinformers.NewSharedInformerFactory(PlainListsGateway(client), 0)
			f.Gateway().V1().Gateways().Informer()
			f.Start(stop)
			return nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			first := make(chan *http.Request, 16)
			stop := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case first <- r:
				default:
				}
				select { // an apiserver that answers nothing
				case <-r.Context().Done():
				case <-stop:
				}
			}))
			defer srv.Close()
			defer close(stop)
			if err := c.start(&rest.Config{Host: srv.URL}, stop); err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-first:
				q := r.URL.Query()
				streamed := q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true"
				if streamed != c.streamed {
					t.Errorf("first request %s: streamed %v, want %v", r.URL.RequestURI(), streamed, c.streamed)
				}
				if r.URL.Path != c.path {
					t.Errorf("first request %s: want %s", r.URL.RequestURI(), c.path)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no request from the informer within 10 s")
			}
		})
	}
	if PlainLists(nil) != nil || PlainListsDynamic(nil) != nil || PlainListsGateway(nil) != nil {
		t.Error("a nil client wrapped: want nil")
	}
}

// TestWatchListFromEnvSetsTheGate: WatchListClient is on (the large kinds'
// first lists streamed) unless the command's environment sets client-go's variable,
// whose value then decides; a value that is no boolean is refused,
// naming the variable.
func TestWatchListFromEnvSetsTheGate(t *testing.T) {
	for _, c := range []struct {
		env     string
		want    bool
		refused bool
	}{
		{"", true, false},
		{"true", true, false},
		{"1", true, false},
		{"false", false, false},
		{"maybe", false, true},
	} {
		t.Run(c.env, func(t *testing.T) {
			g := setGates{}
			err := watchListFromEnv(func(k string) string {
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
		t.Errorf("client-go's default gates %T take no Set: WatchListFromEnv would do nothing", features.FeatureGates())
	}
}

type setGates map[features.Feature]bool

func (g setGates) Set(f features.Feature, on bool) error { g[f] = on; return nil }

// TestStreamedFollowsTheGate: Streamed says what WatchListFromEnv set on
// client-go's own gates (the start's hold takes its room from it).
func TestStreamedFollowsTheGate(t *testing.T) {
	t.Cleanup(func() { _ = WatchListFromEnv(func(string) string { return "" }) })
	for _, c := range []struct {
		env  string
		want bool
	}{{"", true}, {"false", false}, {"true", true}} {
		if err := WatchListFromEnv(func(string) string { return c.env }); err != nil {
			t.Fatal(err)
		}
		if got := Streamed(); got != c.want {
			t.Errorf("%s=%q: Streamed %v, want %v", watchListEnv, c.env, got, c.want)
		}
	}
}
