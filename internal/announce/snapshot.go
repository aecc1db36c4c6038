package announce

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
)

// SnapshotFile is the name of the file, beside the state file, where
// `run` keeps this host's view of who announces each address for
// `status` (a process of its own, without the apiserver).
const SnapshotFile = "announced.json"

// SnapshotEvery is how often the file is written again (its Updated
// time), besides on every move; StaleAfter is when `status` stops
// trusting it (the controller stopped or hung).
const (
	SnapshotEvery = 2 * time.Second
	StaleAfter    = 15 * time.Second
)

// Snapshot is who announces each address, as one host knows it at
// Updated (Holders: with layer 2 the group's owners, with BGP this host
// for the addresses it advertises to an established router).
type Snapshot struct {
	Announcer string                  `json:"announcer"`
	Updated   time.Time               `json:"updated"`
	Holders   map[netip.Addr][]string `json:"holders"`
}

// Stale reports whether s is too old to be trusted at now.
func (s Snapshot) Stale(now time.Time) bool { return now.Sub(s.Updated) > StaleAfter }

// ReadSnapshot reads the file written by KeepSnapshot.
func ReadSnapshot(path string) (Snapshot, error) {
	var s Snapshot
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// KeepSnapshot writes holders to path (whole, atomically) every
// SnapshotEvery and whenever wake fires, until ctx ends; then it removes
// the file (nobody keeps it up to date any more).
func KeepSnapshot(ctx context.Context, path, announcer string, holders func(context.Context) Holders, wake <-chan struct{}) error {
	t := time.NewTicker(SnapshotEvery)
	defer t.Stop()
	defer os.Remove(path)
	for {
		s := Snapshot{Announcer: announcer, Updated: time.Now().UTC().Truncate(time.Millisecond), Holders: holders(ctx)}
		if ctx.Err() != nil {
			return nil
		}
		if s.Holders == nil {
			s.Holders = Holders{}
		}
		b, err := json.Marshal(s)
		if err == nil {
			err = atomicfile.Write(path, b, 0o644)
		}
		if err != nil {
			return fmt.Errorf("announced snapshot: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-wake:
		}
	}
}
