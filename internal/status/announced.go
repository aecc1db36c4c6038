package status

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
)

// Announced is who announces the addresses, as the controller of this
// host knew it at Updated (announce.Snapshot), for the report.
type Announced struct {
	Announcer string    `json:"announcer"`
	Updated   time.Time `json:"updated"`
	// Stale: written too long ago (announce.StaleAfter) to be trusted:
	// the rows then name no holder.
	Stale bool `json:"stale"`
}

// WithAnnounced adds to r who announces each row's listen addresses,
// from the snapshot s read at now: each row's AnnouncedBy is the hosts
// announcing any of them ("nobody" kept out: an empty list), none when
// s is stale.
func (r *Report) WithAnnounced(s announce.Snapshot, now time.Time) {
	r.Announced, r.now = &Announced{Announcer: s.Announcer, Updated: s.Updated, Stale: s.Stale(now)}, now
	for i := range r.Rows {
		by := []string{}
		if !r.Announced.Stale {
			for _, l := range r.Rows[i].Listen {
				a, ok := listenAddr(l)
				if !ok {
					continue
				}
				for _, h := range s.Holders[a] {
					if !slices.Contains(by, h) {
						by = append(by, h)
					}
				}
			}
			slices.Sort(by)
		}
		r.Rows[i].AnnouncedBy = by
	}
}

// announcedCell is a row's ANNOUNCED BY.
func announcedCell(row Row, a *Announced) string {
	switch {
	case a.Stale:
		return "?"
	case len(row.AnnouncedBy) == 0:
		return "-"
	}
	return strings.Join(row.AnnouncedBy, ",")
}

// write is the table's line on the announcers' view.
func (a *Announced) write(w io.Writer, now time.Time) error {
	age := now.Sub(a.Updated).Round(time.Second)
	if a.Stale {
		_, err := fmt.Fprintf(w, "announced (--announce=%s): STALE, last written %s ago (is the controller running?)\n", a.Announcer, age)
		return err
	}
	_, err := fmt.Fprintf(w, "announced (--announce=%s): as this host's controller knew it %s ago\n", a.Announcer, age)
	return err
}

// listenAddr is the address of a listen entry: ADDR:PORT, [ADDR]:PORT,
// or HAProxy's bind syntax for IPv6 (ADDR:PORT without brackets).
func listenAddr(l string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(l); err == nil {
		return ap.Addr().Unmap(), true
	}
	i := strings.LastIndexByte(l, ':')
	if i < 0 {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(l[:i])
	return a.Unmap(), err == nil
}
