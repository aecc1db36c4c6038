package controller

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
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
			m := map[string]settings.Settings{}
			for i := range n {
				set := settings.Defaults()
				set.Balance, set.MaxConn = "leastconn", i
				set.CheckInterval = time.Duration(i) * time.Second
				m[fmt.Sprintf("ns/svc-%03d \"quoted\"", n-i)] = set
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
			if err != nil || !maps.Equal(back, m) {
				t.Fatalf("load = %v, %v; want %v", back, err, m)
			}
		})
	}
}
