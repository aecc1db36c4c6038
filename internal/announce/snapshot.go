package announce

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"slices"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
)

// SnapshotFile is the name of the file, beside the state file, where
// `run` keeps this host's view of who announces each address for
// `status` (a process of its own, without the apiserver).
const SnapshotFile = "announced.json"

// SnapshotEvery is how often the file's modification time is renewed
// (its contents are written only when they change); StaleAfter is when
// `status` stops trusting it (the controller stopped or hung).
const (
	SnapshotEvery = 2 * time.Second
	StaleAfter    = 15 * time.Second
)

// Snapshot is who announces each address, as one host knows it at
// Updated (Holders: with layer 2 the group's owners, with BGP this host
// for the addresses it advertises to an established router).
type Snapshot struct {
	Announcer string `json:"announcer"`
	// Updated is when the writer last said the file is true: the file's
	// own modification time, renewed every SnapshotEvery without
	// rewriting it (ReadSnapshot).
	Updated time.Time `json:"-"`
	// Changed is when Holders last changed (the contents written).
	Changed time.Time               `json:"changed"`
	Holders map[netip.Addr][]string `json:"holders"`
}

// Stale reports whether s is too old to be trusted at now.
func (s Snapshot) Stale(now time.Time) bool { return now.Sub(s.Updated) > StaleAfter }

// ReadSnapshot reads the file written by KeepSnapshot; its Updated is
// the file's modification time.
func ReadSnapshot(path string) (Snapshot, error) {
	var s Snapshot
	f, err := os.Open(path)
	if err != nil {
		return s, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return s, err
	}
	if err := json.NewDecoder(f).Decode(&s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	s.Updated = fi.ModTime().UTC()
	return s, nil
}

// KeepSnapshot writes holders to path (whole, atomically) when they
// change, looked at every SnapshotEvery and whenever wake fires, until
// ctx ends; in between it only renews the file's modification time
// (no write, no sync: a host's disk is not written every 2 s to say
// nothing changed). Then it removes the file (nobody keeps it up to
// date any more).
func KeepSnapshot(ctx context.Context, path, announcer string, holders func(context.Context) Holders, wake <-chan struct{}) error {
	t := time.NewTicker(SnapshotEvery)
	defer t.Stop()
	defer os.Remove(path)
	var last Holders
	written := false
	for {
		h := holders(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if h == nil {
			h = Holders{}
		}
		now := time.Now()
		if !written || !maps.EqualFunc(h, last, slices.Equal) {
			s := Snapshot{Announcer: announcer, Changed: now.UTC().Truncate(time.Millisecond), Holders: h}
			b, err := json.Marshal(s)
			if err == nil {
				err = atomicfile.Write(path, b, 0o644)
			}
			if err != nil {
				return fmt.Errorf("announced snapshot: %w", err)
			}
			last, written = h, true
		} else if err := os.Chtimes(path, now, now); err != nil {
			written = false // gone (removed by hand): written again at once
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-wake:
		}
	}
}
