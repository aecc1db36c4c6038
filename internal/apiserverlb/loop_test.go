package apiserverlb

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// recorder is a driver that remembers the server lists it was given.
type recorder struct {
	mu      sync.Mutex
	applied [][]netip.AddrPort
}

func (r *recorder) Apply(_ context.Context, cfg model.Config) (driver.Result, error) {
	var s []netip.AddrPort
	for _, sv := range cfg.Backends[0].Servers {
		s = append(s, sv.Key())
	}
	r.mu.Lock()
	r.applied = append(r.applied, s)
	r.mu.Unlock()
	return driver.Result{Ops: 1}, nil
}

func (r *recorder) last() []netip.AddrPort {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.applied) == 0 {
		return nil
	}
	return r.applied[len(r.applied)-1]
}

func (r *recorder) all() [][]netip.AddrPort {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.applied)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func kubernetesSlice(addrs ...string) *discoveryv1.EndpointSlice {
	s := slice(6443, "https", ep(nil, addrs...))
	s.Labels = map[string]string{discoveryv1.LabelServiceName: "kubernetes"}
	return s
}

type harness struct {
	drv    *recorder
	loop   *Loop
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, opts Options, connect Connect) *harness {
	t.Helper()
	s, err := NewShape([]string{":6443"}, defaults())
	if err != nil {
		t.Fatal(err)
	}
	opts.Shape = s
	opts.Port = 6443
	opts.RetryMax = 50 * time.Millisecond
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	h := &harness{drv: &recorder{}, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	l := New(h.drv, connect, opts)
	h.loop = l
	go func() { h.done <- l.Run(ctx) }()
	t.Cleanup(h.stop)
	return h
}

func (h *harness) stop() {
	if h.cancel != nil {
		h.cancel()
		<-h.done
		h.cancel = nil
	}
}

// gate is a Connect that fails until opened.
type gate struct {
	mu       sync.Mutex
	client   kubernetes.Interface
	attempts int
}

func (g *gate) connect(context.Context) (kubernetes.Interface, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.attempts++
	if g.client == nil {
		return nil, errors.New("connection refused")
	}
	return g.client, nil
}

func (g *gate) open(c kubernetes.Interface) { g.mu.Lock(); g.client = c; g.mu.Unlock() }

func (g *gate) tries() int { g.mu.Lock(); defer g.mu.Unlock(); return g.attempts }

// Bootstrap: the static list is served before the API answers; once it
// does, the cluster's list replaces it and is kept on disk; a restart
// while the API is unreachable serves the kept list, not the static one.
func TestLoopBootstrapAndRestart(t *testing.T) {
	state := filepath.Join(t.TempDir(), "apiservers.json")
	static := aps("192.0.2.31:6443")
	opts := Options{Sources: []string{SourceEndpointSlice, SourceNodes, SourceStatic}, Static: static, StateFile: state}

	g := &gate{}
	h := start(t, opts, g.connect)
	eventually(t, "the static list", func() bool { return slices.Equal(h.drv.last(), static) })
	eventually(t, "a few connection attempts", func() bool { return g.tries() >= 3 })

	cluster := aps("192.0.2.1:6443", "192.0.2.2:6443")
	g.open(fake.NewClientset(kubernetesSlice("192.0.2.1", "192.0.2.2")))
	eventually(t, "the cluster's list", func() bool { return slices.Equal(h.drv.last(), cluster) })
	eventually(t, "the state file", func() bool {
		c, err := LoadState(state)
		return err == nil && c.Source == SourceEndpointSlice && slices.Equal(c.Servers, cluster)
	})
	h.stop()

	// Restart, the API down: the kept list, never the static one.
	down := &gate{}
	h = start(t, opts, down.connect)
	eventually(t, "the kept list", func() bool { return slices.Equal(h.drv.last(), cluster) })
	eventually(t, "a few failed connection attempts", func() bool { return down.tries() >= 3 })
	for _, a := range h.drv.all() {
		if !slices.Equal(a, cluster) {
			t.Fatalf("applied %v while the API was down; want only %v", a, cluster)
		}
	}
	if c, _ := LoadState(state); c.Source != SourceEndpointSlice {
		t.Errorf("state file source rewritten to %q", c.Source)
	}
}

// An empty source never wipes the servers; the next source in the order
// takes over when it has servers.
func TestLoopEmptySourceKeepsServers(t *testing.T) {
	client := fake.NewClientset(kubernetesSlice("192.0.2.1", "192.0.2.2"))
	opts := Options{Sources: []string{SourceEndpointSlice, SourceNodes}}
	h := start(t, opts, func(context.Context) (kubernetes.Interface, error) { return client, nil })
	both := aps("192.0.2.1:6443", "192.0.2.2:6443")
	eventually(t, "the slice's list", func() bool { return slices.Equal(h.drv.last(), both) })

	ctx := context.Background()
	es := client.DiscoveryV1().EndpointSlices("default")
	before := len(h.drv.all())
	if err := es.Delete(ctx, "kubernetes", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The pass the deletion wakes applies the kept list again (a no-op
	// for HAProxy).
	eventually(t, "a pass after the deletion", func() bool { return len(h.drv.all()) > before })
	for _, a := range h.drv.all() {
		if len(a) == 0 {
			t.Fatal("an empty list was applied")
		}
	}
	if !slices.Equal(h.drv.last(), both) {
		t.Fatalf("last applied %v, want the kept %v", h.drv.last(), both)
	}
	// A control-plane node appears: the next source in the order.
	n := node("cp-1", true, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.11"})
	if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the nodes' list", func() bool { return slices.Equal(h.drv.last(), aps("192.0.2.11:6443")) })

	// The slice comes back: it is preferred again.
	if _, err := es.Create(ctx, kubernetesSlice("192.0.2.3"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the slice's new list", func() bool { return slices.Equal(h.drv.last(), aps("192.0.2.3:6443")) })
}

// A ConfigMap with a bad line keeps the last list; fixed, it applies.
func TestLoopConfigMap(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "apiservers"},
		Data: map[string]string{"servers": "192.0.2.21\n192.0.2.22:7443\n"}}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "other"},
		Data: map[string]string{"servers": "192.0.2.99\n"}}
	client := fake.NewClientset(cm, other)
	opts := Options{Sources: []string{SourceConfigMap, SourceStatic}, Static: aps("192.0.2.31:6443"),
		ConfigMapNamespace: "kube-system", ConfigMapName: "apiservers"}
	h := start(t, opts, func(context.Context) (kubernetes.Interface, error) { return client, nil })
	good := aps("192.0.2.21:6443", "192.0.2.22:7443")
	eventually(t, "the ConfigMap's list", func() bool { return slices.Equal(h.drv.last(), good) })

	ctx := context.Background()
	cm.Data["servers"] = "192.0.2.21\nmaster-2\n"
	before := len(h.drv.all())
	if _, err := client.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a pass after the update", func() bool { return len(h.drv.all()) > before })
	if !slices.Equal(h.drv.last(), good) {
		t.Fatalf("after a bad line: applied %v, want the kept %v", h.drv.last(), good)
	}
	cm.Data["servers"] = "192.0.2.23\n"
	if _, err := client.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the fixed list", func() bool { return slices.Equal(h.drv.last(), aps("192.0.2.23:6443")) })
}

// A kept list that came from --bootstrap-servers gives way to the flag as
// it is now: the operator changed it.
func TestLoopStaticStateFollowsTheFlag(t *testing.T) {
	state := filepath.Join(t.TempDir(), "apiservers.json")
	if err := SaveState(state, Choice{Source: SourceStatic, Servers: aps("192.0.2.31:6443")}, time.Now()); err != nil {
		t.Fatal(err)
	}
	now := aps("192.0.2.32:6443")
	h := start(t, Options{Sources: []string{SourceEndpointSlice, SourceStatic}, Static: now, StateFile: state}, (&gate{}).connect)
	eventually(t, "the flag's list", func() bool { return slices.Equal(h.drv.last(), now) })
	eventually(t, "the state file", func() bool {
		c, err := LoadState(state)
		return err == nil && slices.Equal(c.Servers, now)
	})
	if got := h.drv.all(); !slices.Equal(got[0], now) {
		t.Fatalf("first applied %v, want %v", got[0], now)
	}
	h.stop()

	// A list kept from the cluster, and now static is the only source:
	// the flag, since nothing would ever replace the kept list.
	if err := SaveState(state, Choice{Source: SourceEndpointSlice, Servers: aps("192.0.2.1:6443")}, time.Now()); err != nil {
		t.Fatal(err)
	}
	h = start(t, Options{Sources: []string{SourceStatic}, Static: now, StateFile: state}, nil)
	eventually(t, "the flag's list", func() bool { return slices.Equal(h.drv.last(), now) })
	if got := h.drv.all(); !slices.Equal(got[0], now) {
		t.Fatalf("static only: first applied %v, want %v", got[0], now)
	}
}
