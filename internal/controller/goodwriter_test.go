package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// statDriver records, at each Apply, whether the last-good file exists.
type statDriver struct {
	path    string
	existed []bool
}

func (d *statDriver) Apply(context.Context, model.Config) (driver.Result, error) {
	_, err := os.Stat(d.path)
	d.existed = append(d.existed, err == nil)
	return driver.Result{}, nil
}

// untilFile polls path until check accepts its content, or fails the
// test after a deadline.
func untilFile(t *testing.T, path string, check func(map[string]*settings.Settings) error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var m map[string]*settings.Settings
		b, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err == nil {
			err = check(m)
		}
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", path, err)
		}
		time.Sleep(5 * time.Millisecond) // poll interval
	}
}

// The first pass of a start reaches the driver before the last good
// settings are written (they were encoded and synced on its path: ~0.1 s
// at 10,000 Services), and the writer then puts them on disk.
func TestLastGoodWrittenAfterTheDriver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "last-good-settings.json")
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	drv := &statDriver{path: path}
	c, src := testController(fake.NewSimpleClientset(svc), drv,
		Options{Desired: desired.Options{Defaults: settings.Defaults(), ClassLess: true}, LastGoodPath: path})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	syncCaches(ctx, t, src)
	if _, err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if len(drv.existed) != 1 || drv.existed[0] {
		t.Fatalf("last-good file existed when the driver applied (%v): written on the pass's path", drv.existed)
	}
	go c.good.run(ctx)
	untilFile(t, path, func(m map[string]*settings.Settings) error {
		if _, ok := m["ns/web"]; !ok {
			return fmt.Errorf("no ns/web in %v", m)
		}
		return nil
	})
}

// The writer writes the newest map it was handed, what was still pending
// when it stops too, and nothing for a map equal to the file's.
func TestGoodWriter(t *testing.T) {
	one := func(keys ...string) map[string]*settings.Settings {
		m := map[string]*settings.Settings{}
		for _, k := range keys {
			m[k] = new(settings.Defaults())
		}
		return m
	}
	cases := []struct {
		name    string
		loaded  map[string]*settings.Settings // the file at start (nil: none)
		wants   []map[string]*settings.Settings
		running bool // the writer runs while they are handed over; else only its stop writes
		want    map[string]*settings.Settings
		written bool
	}{
		{name: "newest of several", wants: []map[string]*settings.Settings{one("ns/a"), one("ns/a", "ns/b")}, running: true,
			want: one("ns/a", "ns/b"), written: true},
		{name: "pending at stop", wants: []map[string]*settings.Settings{one("ns/a"), one("ns/c")},
			want: one("ns/c"), written: true},
		{name: "same as the file", loaded: one("ns/a"), wants: []map[string]*settings.Settings{one("ns/a")}, running: true,
			want: one("ns/a"), written: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "last-good.json")
			if tc.loaded != nil {
				b, _ := json.Marshal(tc.loaded)
				if err := os.WriteFile(path, b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := os.Stat(path)
			w := newGoodWriter(lastGoodStore{path}, slog.Default())
			w.loaded(tc.loaded)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			start := func() { go func() { w.run(ctx); close(done) }() }
			if tc.running {
				start()
			}
			for _, m := range tc.wants {
				w.want(m, false)
			}
			if tc.running {
				untilFile(t, path, func(m map[string]*settings.Settings) error {
					if !settings.EqualMaps(m, tc.want) {
						return fmt.Errorf("holds %v, want %v", m, tc.want)
					}
					return nil
				})
			}
			cancel()
			if !tc.running {
				start()
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the writer did not stop")
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]*settings.Settings
			if err := json.Unmarshal(b, &got); err != nil || !settings.EqualMaps(got, tc.want) {
				t.Fatalf("file holds %v (%v), want %v", got, err, tc.want)
			}
			after, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if rewritten := before == nil || !os.SameFile(before, after); rewritten != tc.written {
				t.Errorf("file written: %v, want %v", rewritten, tc.written)
			}
		})
	}
}

// A write that fails is said in the log and leaves the pass alone; the
// next map is written once the file can be.
func TestGoodWriterFailedWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	path := filepath.Join(dir, "last-good.json")
	w := newGoodWriter(lastGoodStore{path}, slog.Default())
	w.want(map[string]*settings.Settings{"ns/a": new(settings.Defaults())}, false)
	w.flush()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stat after a failed write: %v", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w.want(map[string]*settings.Settings{"ns/a": new(settings.Defaults())}, false)
	w.flush()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("not written once it could be: %v", err)
	}
}

// After a write the writer waits lastGoodGap before the next one, the
// newest map handed to it meanwhile written then; a stop during the wait
// writes what is pending at once.
func TestGoodWriterSpacesWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "last-good.json")
	w := newGoodWriter(lastGoodStore{path}, slog.Default())
	release := make(chan time.Time)
	waiting := make(chan time.Duration, 1)
	w.after = func(d time.Duration) <-chan time.Time { waiting <- d; return release }
	untilWaiting := func() {
		t.Helper()
		select {
		case d := <-waiting:
			if d != lastGoodGap {
				t.Fatalf("waits %v, want %v", d, lastGoodGap)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the writer did not wait after a write")
		}
	}
	holds := func(keys ...string) func(map[string]*settings.Settings) error {
		return func(m map[string]*settings.Settings) error {
			if len(m) != len(keys) {
				return fmt.Errorf("holds %v, want %v", m, keys)
			}
			for _, k := range keys {
				if _, ok := m[k]; !ok {
					return fmt.Errorf("holds %v, want %v", m, keys)
				}
			}
			return nil
		}
	}
	set := func(keys ...string) map[string]*settings.Settings {
		m := map[string]*settings.Settings{}
		for _, k := range keys {
			m[k] = new(settings.Defaults())
		}
		return m
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.run(ctx); close(done) }()
	w.want(set("ns/a"), false)
	untilFile(t, path, holds("ns/a"))
	untilWaiting()
	w.want(set("ns/a", "ns/b"), false)
	w.want(set("ns/a", "ns/b", "ns/c"), false)
	untilFile(t, path, holds("ns/a")) // the writer waits on release: nothing else can be written
	release <- time.Now()
	untilFile(t, path, holds("ns/a", "ns/b", "ns/c"))
	untilWaiting()
	w.want(set("ns/d"), false)
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer did not stop")
	}
	untilFile(t, path, holds("ns/d"))
}

// A pass that adds or removes a few Services edits the last pass's map in
// place (desired.Result.GoodEdited): the writer writes it again though it
// is the very map it wrote, and trusts the map it wrote no longer to
// match the file; while it reads a map, a pass copies before it changes
// one (as desired.Memo.CopyGood), so with the race detector the passes'
// edits and the writer's reads never meet.
func TestGoodWriterMapEditedInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "last-good.json")
	var mu sync.RWMutex
	w := newGoodWriter(lastGoodStore{path}, slog.Default())
	w.guard, w.gap = mu.RLocker(), 0
	holds := func(keys ...string) func(map[string]*settings.Settings) error {
		return func(m map[string]*settings.Settings) error {
			if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, keys) {
				return fmt.Errorf("holds %v, want %v", got, keys)
			}
			return nil
		}
	}
	// pass changes m as a delta pass does and hands it to the writer.
	pass := func(m map[string]*settings.Settings, add, del string) map[string]*settings.Settings {
		mu.Lock()
		edited := !w.reading()
		if !edited {
			m = maps.Clone(m)
		}
		if add != "" {
			m[add] = new(settings.Defaults())
		}
		delete(m, del)
		mu.Unlock()
		w.want(m, edited)
		return m
	}
	m := map[string]*settings.Settings{"ns/a": new(settings.Defaults())}
	w.want(m, false)
	w.flush()
	untilFile(t, path, holds("ns/a"))
	m = pass(m, "ns/b", "") // the same map, edited: written again
	w.flush()
	untilFile(t, path, holds("ns/a", "ns/b"))
	// Edited again, then a whole pass's new map with the same contents
	// before the writer ran: the map written last is no proof of what
	// the file holds.
	m = pass(m, "ns/c", "ns/a")
	w.want(maps.Clone(m), false)
	w.flush()
	untilFile(t, path, holds("ns/b", "ns/c"))

	// Passes racing the writer: the file ends with the last.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	for i := range 200 {
		m = pass(m, fmt.Sprintf("ns/x%03d", i), "")
	}
	want := []string{"ns/b", "ns/c"}
	for i := range 200 {
		want = append(want, fmt.Sprintf("ns/x%03d", i))
	}
	untilFile(t, path, holds(want...))
}
