package cli

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// run's informers read their first list as the environment run is given
// says (kubeclient.WatchListFromEnv, asked once where the command starts, with
// its getenv): the Services' as client-go's watch of the initial events
// unless KUBE_FEATURE_WatchListClient is false there.
// The variable is never in the test's own environment: before the call
// took run's getenv, the "false" case streamed (os.Getenv decided).
func TestRunListsAsItsEnvironmentSays(t *testing.T) {
	const name = "KUBE_FEATURE_WatchListClient"
	if os.Getenv(name) != "" {
		t.Skipf("%s is set in the test's environment", name)
	}
	for _, c := range []struct {
		env       string
		watchList bool
	}{
		{"", true},
		{"true", true},
		{"false", false},
	} {
		t.Run("env="+c.env, func(t *testing.T) {
			first, log, err := runFirstServicesRequest(t, map[string]string{name: c.env})
			if err != nil {
				t.Fatalf("run: %v\n%s", err, log)
			}
			q := first.Query()
			if got := q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true"; got != c.watchList {
				t.Errorf("%s=%q: the Services' first request %s, want a watch of the initial events %v", name, c.env, first, c.watchList)
			}
		})
	}
	_, _, err := runFirstServicesRequest(t, map[string]string{name: "maybe"})
	if u := (usageError{}); !errors.As(err, &u) || !strings.Contains(err.Error(), name) {
		t.Errorf("%s=maybe: %v, want a usage error naming the variable", name, err)
	}
}

// runFirstServicesRequest runs `run` (the local HAProxy's driver, its
// files in a temporary directory) against a stand-in apiserver answering
// empty lists and silent watches, with vars as its environment, until the
// Services' informer asks its first request; it returns that request's
// URL and run's log, or run's error if it ended before that request.
func runFirstServicesRequest(t *testing.T, vars map[string]string) (*url.URL, string, error) {
	t.Helper()
	first := make(chan *url.URL, 1)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/services" {
			select {
			case first <- r.URL:
			default:
			}
		}
		if r.URL.Query().Get("watch") == "true" {
			select { // a watch that sends nothing
			case <-r.Context().Done():
			case <-done:
			}
			return
		}
		list, ok := map[string]string{"/api/v1/services": `"ServiceList","apiVersion":"v1"`, "/api/v1/nodes": `"NodeList","apiVersion":"v1"`,
			"/apis/discovery.k8s.io/v1/endpointslices": `"EndpointSliceList","apiVersion":"discovery.k8s.io/v1"`}[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":` + list + `,"metadata":{"resourceVersion":"1"},"items":[]}`))
	}))
	defer srv.Close()
	defer close(done)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: '"+srv.URL+
		"'}}]\ncontexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var log bytes.Buffer
	ran := make(chan error, 1)
	go func() {
		ran <- Run(ctx, []string{"--kubeconfig", kubeconfig, "--haproxy-bin", haproxytest.Bin(),
			"--haproxy-config", filepath.Join(dir, "haproxy.cfg"), "--master-socket", filepath.Join(dir, "master.sock"),
			"--stats-socket", filepath.Join(dir, "stats.sock"), "--state-file", filepath.Join(dir, "state"),
			"--udp=off", "--listeners=ports", "--metrics-address", "127.0.0.1:0"}, env(vars), &log)
	}()
	select {
	case u := <-first:
		cancel()
		<-ran // stopped by the test: whatever it says of that
		return u, log.String(), nil
	case err := <-ran:
		if err == nil {
			err = errors.New("run returned before the Services' informer asked anything")
		}
		return nil, log.String(), err
	}
}
