package bgp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// refusals is what a speaker child was told of refusals: each OnRefused
// message and how many its metrics counted (written to
// speakerFile.RefusedFile on every change).
type refusals struct {
	mu      sync.Mutex
	file    string
	Told    []string `json:"told"`
	Counted int      `json:"counted"`
}

func (r *refusals) Addresses(int)     {}
func (r *refusals) Sessions(int)      {}
func (r *refusals) Held([]netip.Addr) {}

func (r *refusals) Refused(peer, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Counted++
	r.write()
}

func (r *refusals) told(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Told = append(r.Told, msg)
	r.write()
}

func (r *refusals) write() {
	if b, err := json.Marshal(r); err == nil {
		_ = atomicfile.Write(r.file, b, 0o600)
	}
}

// TestRouterRefusesTheSession: BIRD expects the host in another AS and
// refuses its OPEN (a NOTIFICATION: bad peer AS), at every try: each
// refusal is counted (the metric), told once (the Event) with the router
// and the reason, and the router learns no route. (GoBGP reports the
// NOTIFICATION answering its OPEN as an invalid message, without its
// code.)
func TestRouterRefusesTheSession(t *testing.T) {
	l := newLab(t, 1, birdOpts{})
	lb1 := l.lbs[0]
	file := filepath.Join(l.dir, "lb1.refused")
	w := announce.Want{Addrs: []netip.Addr{vip4}, Healthy: true}
	l.start(lb1, speakerFile{Config: Config{ASN: hostASN + 1}, RefusedFile: file}, w)
	var last refusals
	if err := netlab.Eventually(context.Background(), 45*time.Second, func() error {
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		last = refusals{}
		if err := json.Unmarshal(b, &last); err != nil {
			return err
		}
		if last.Counted < 2 {
			return fmt.Errorf("%d refusals counted, want two tries refused at least (told %q)", last.Counted, last.Told)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	router := l.routerAddr().String()
	if len(last.Told) != 1 || !strings.HasPrefix(last.Told[0], "router "+router+" refused the BGP session of "+lb1.Addr.String()+" (") {
		t.Fatalf("told %q after %d refusals, want one message of %s refusing", last.Told, last.Counted, router)
	}
	if rs, err := l.routes(vip4); err != nil || len(rs) != 0 {
		t.Fatalf("the router holds %v (%v), want no route", rs, err)
	}
	t.Logf("%d refusals counted, told once: %s", last.Counted, last.Told[0])
}
