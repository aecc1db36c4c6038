package controller

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// The file is written entry by entry; it must be what json.Marshal gives,
// and load must return what was saved.
func TestLastGoodStoreRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 50} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s := lastGoodStore{path: filepath.Join(t.TempDir(), "last-good.json")}
			m := map[string]*settings.Settings{}
			for i := range n {
				set := settings.Defaults()
				set.Balance, set.MaxConn = "leastconn", i
				set.CheckInterval = time.Duration(i+1) * time.Second // valid: load drops what Validate refuses
				m[fmt.Sprintf("ns/svc-%03d \"quoted\"", n-i)] = &set
			}
			if err := s.save(nil, m); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(s.path)
			if err != nil {
				if n == 0 {
					return // equal to the empty old map: nothing written
				}
				t.Fatal(err)
			}
			want, _ := json.Marshal(m)
			if string(got) != string(want) {
				t.Fatalf("file\n%s\nwant\n%s", got, want)
			}
			back, err := s.load()
			if err != nil || !settings.EqualMaps(back, m) {
				t.Fatalf("load = %v, %v; want %v", back, err, m)
			}
		})
	}
}

// A last-good file written before the check setting became auto|true|false
// holds "Check" as a JSON boolean: it loads, each boolean as the same
// explicit choice, and is written back in the new form.
func TestLastGoodStoreLoadsOlderFile(t *testing.T) {
	s := lastGoodStore{path: filepath.Join(t.TempDir(), "last-good.json")}
	old := `{"ns/a":{"Balance":"roundrobin","Check":true,"CheckInterval":2000000000,"Rise":2,"Fall":3,"SendProxyV2":false,"AcceptProxy":false,"TimeoutConnect":5000000000,"TimeoutClient":60000000000,"TimeoutServer":60000000000,"MaxConn":0,"BackendPort":0},` +
		`"ns/b":{"Balance":"leastconn","Check":false,"CheckInterval":2000000000,"Rise":2,"Fall":3,"SendProxyV2":true,"AcceptProxy":false,"TimeoutConnect":5000000000,"TimeoutClient":60000000000,"TimeoutServer":60000000000,"MaxConn":0,"BackendPort":0}}`
	if err := os.WriteFile(s.path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := s.load()
	if err != nil {
		t.Fatal(err)
	}
	a, b := settings.Defaults(), settings.Defaults()
	a.Check = settings.CheckTrue
	b.Check, b.Balance, b.SendProxyV2 = settings.CheckFalse, "leastconn", true
	want := map[string]*settings.Settings{"ns/a": &a, "ns/b": &b}
	if !settings.EqualMaps(got, want) {
		t.Fatalf("load = %+v\nwant %+v", got, want)
	}
	got["ns/c"] = new(settings.Defaults())
	if err := s.save(want, got); err != nil {
		t.Fatal(err)
	}
	b2, _ := os.ReadFile(s.path)
	for _, w := range []string{`"Check":"true"`, `"Check":"false"`, `"Check":"auto"`} {
		if !strings.Contains(string(b2), w) {
			t.Errorf("saved file lacks %s:\n%s", w, b2)
		}
	}
	back, err := s.load()
	if err != nil || !settings.EqualMaps(back, got) {
		t.Fatalf("reload = %+v, %v", back, err)
	}
}

// load makes one object of equal settings, as the passes do (most
// Services have the same: 10,000 copies were ~1.3 MB at a start), and
// drops an entry without settings (null) with an error naming it.
func TestLastGoodStoreLoadShares(t *testing.T) {
	s := lastGoodStore{path: filepath.Join(t.TempDir(), "last-good.json")}
	a, b := settings.Defaults(), settings.Defaults()
	b.Balance = "leastconn"
	if err := s.write(map[string]*settings.Settings{"ns/a1": &a, "ns/a2": new(a), "ns/b": &b}); err != nil {
		t.Fatal(err)
	}
	got, err := s.load()
	if err != nil || len(got) != 3 {
		t.Fatalf("load = %v, %v", got, err)
	}
	if got["ns/a1"] != got["ns/a2"] || got["ns/a1"] == got["ns/b"] || *got["ns/a1"] != a || *got["ns/b"] != b {
		t.Errorf("load = a1 %p %+v, a2 %p, b %p %+v: want a1 and a2 one object", got["ns/a1"], *got["ns/a1"], got["ns/a2"], got["ns/b"], *got["ns/b"])
	}
	if err := os.WriteFile(s.path, []byte(`{"ns/a":null,"ns/b":{"Balance":"roundrobin","Check":"auto","CheckInterval":2000000000,"Rise":2,"Fall":3,"TimeoutConnect":5000000000,"TimeoutClient":60000000000,"TimeoutServer":60000000000}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err = s.load()
	if err == nil || !strings.Contains(err.Error(), "ns/a") || len(got) != 1 || got["ns/b"] == nil {
		t.Errorf("load of a null entry = %v, %v; want ns/b alone and an error naming ns/a", got, err)
	}
}
