package layer2

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
)

// Layer 2's graceful restart (announce/restart.go): a run that stops
// healthy, with Config.RestartTime and Config.KeptFile set, leaves its
// addresses on the interface with a lifetime of the restart time, writes
// what it held (and how: the terms and support of its claims) to the
// kept file and asks the others, in its last heartbeats, to wait that
// long; the next run reads the file (and removes it) and adopts the
// claims whose address is still on the interface, so a restart or an
// upgrade of the controller moves nothing and resets no connection. A
// run that never comes back loses its addresses when the restart time
// ends: the others take them and its own lapse.

// kept is the kept file.
type kept struct {
	Host   string           `json:"host"`
	Until  time.Time        `json:"until"`
	Claims []announce.Claim `json:"claims"`
}

// lastBeats is how many times the last heartbeat is sent (UDP: one
// lost would let the others take the addresses after the hold time).
const lastBeats = 3

// leave is the stop of a restart: it reports whether the addresses were
// left on the interface for the next run (else the caller lets them go).
func (a *Announcer) leave() bool {
	r := a.cfg.RestartTime
	claims := a.node.Claims()
	if r <= 0 || a.cfg.KeptFile == "" || !a.node.Healthy() || len(claims) == 0 {
		return false
	}
	b, err := json.Marshal(kept{Host: a.cfg.ID, Until: time.Now().Add(r).UTC(), Claims: claims})
	if err == nil {
		err = atomicfile.Write(a.cfg.KeptFile, b, 0o600)
	}
	if err != nil {
		a.log.Error("the addresses are let go, not kept for a restart", "file", a.cfg.KeptFile, "error", err)
		return false
	}
	a.work.finish(r, finishWithin)
	a.node.Leave(r)
	for range lastBeats {
		a.send()
	}
	a.log.Info("addresses kept for a restart", "addresses", len(claims), "for", r)
	return true
}

// adopt starts the node with the last run's claims (the kept file,
// removed once read) whose addresses are still on the interface.
func (a *Announcer) adopt(now time.Time) {
	if a.cfg.KeptFile == "" {
		return
	}
	b, err := os.ReadFile(a.cfg.KeptFile)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err == nil {
		err = os.Remove(a.cfg.KeptFile)
	}
	var k kept
	if err == nil {
		err = json.Unmarshal(b, &k)
	}
	if err == nil && k.Host != a.cfg.ID {
		err = fmt.Errorf("kept by host %q", k.Host)
	}
	if err != nil {
		a.log.Warn("the last run's addresses are not adopted", "file", a.cfg.KeptFile, "error", err)
		return
	}
	if !now.Before(k.Until) {
		a.log.Info("the last run's addresses are not adopted: its restart time ended", "ended", k.Until)
		return
	}
	on, err := a.link.present()
	if err != nil {
		a.log.Warn("the last run's addresses are not adopted", "error", err)
		return
	}
	var claims []announce.Claim
	for _, c := range k.Claims {
		if permanent, there := on[c.Addr.Unmap()]; there && !permanent {
			claims = append(claims, c)
		}
	}
	a.node.Adopt(claims, k.Until)
	a.work.put(a.node.Holds(), nil)
	a.log.Info("the last run's addresses adopted", "addresses", len(claims), "of", len(k.Claims), "until", k.Until)
}
