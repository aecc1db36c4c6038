package announce

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
)

// Heartbeat is what a host tells the others, every interval and at once
// when something changes.
type Heartbeat struct {
	Host string `json:"host"`
	// Epoch (the sender's start, in Unix nanoseconds) and Seq (counting
	// from 1 within an epoch) order a host's heartbeats: a receiver drops
	// one not newer than the last it took (a replay).
	Epoch   uint64 `json:"epoch"`
	Seq     uint64 `json:"seq"`
	Healthy bool   `json:"healthy"`
	// Fresh: the sender is within its hold-down (Node.HoldDown) and
	// takes no free address while a steady host is there.
	Fresh  bool    `json:"fresh,omitempty"`
	Claims []Claim `json:"claims,omitempty"`
	// Restart, in milliseconds: the sender restarts (its controller, not
	// its data plane) and asks the others to keep counting it the holder
	// of its claims for this long, though they hear nothing from it or it
	// is not healthy yet (restart.go).
	Restart int64 `json:"restart,omitempty"`
	// Deaf, in milliseconds: the sender stalled (its loop did not run:
	// it neither sent nor heard) for this long lately (Node.Deaf), so a
	// receiver does not count that silence as a cut between them (deaf.go).
	Deaf int64 `json:"deaf,omitempty"`
	// Stall, in milliseconds: the longest stall of the sender's loop
	// within StallMemory; a receiver allows its silence that measure
	// before it counts the sender gone (stalls.go). An older receiver
	// ignores it (JSON) and holds the sender to the hold time.
	Stall int64 `json:"stall,omitempty"`
	// Hears: the healthy peers the sender heard within the hold time, and
	// the newest heartbeat it took from each (hears.go). An older sender
	// sends none and an older receiver ignores it (JSON).
	Hears []Heard `json:"hears,omitempty"`
}

// Claim is an address the sender holds, and how.
type Claim struct {
	Addr netip.Addr `json:"addr"`
	Hold
}

// Errors of Open, for errors.Is.
var (
	ErrBadMAC    = errors.New("heartbeat: bad MAC (not signed with the group's key)")
	ErrMalformed = errors.New("heartbeat: malformed")
)

// MaxHeartbeat is the largest heartbeat Seal writes and Open reads: one
// UDP datagram (see MaxHolds).
const MaxHeartbeat = 60 << 10

var magic = []byte("HKA1")

// Seal encodes hb signed with key (HMAC-SHA256 over all that precedes
// the MAC). When the claims leave too little room, hb.Hears is cut
// (halved until it fits, at worst dropped): a heartbeat must go out,
// and one naming fewer peers only vouches for fewer (hears.go).
func Seal(hb Heartbeat, key []byte) ([]byte, error) {
	body, err := json.Marshal(hb)
	for err == nil && len(magic)+len(body)+sha256.Size > MaxHeartbeat && len(hb.Hears) > 0 {
		hb.Hears = hb.Hears[:len(hb.Hears)/2]
		body, err = json.Marshal(hb)
	}
	if err != nil {
		return nil, err
	}
	b := append(append([]byte{}, magic...), body...)
	m := hmac.New(sha256.New, key)
	m.Write(b)
	b = m.Sum(b)
	if len(b) > MaxHeartbeat {
		return nil, fmt.Errorf("heartbeat: %d claims do not fit in one datagram", len(hb.Claims))
	}
	return b, nil
}

// Open checks b's MAC with key and decodes it; a heartbeat signed with
// another key is ErrBadMAC, anything else unreadable ErrMalformed.
func Open(b, key []byte) (Heartbeat, error) {
	var hb Heartbeat
	if len(b) < len(magic)+sha256.Size || len(b) > MaxHeartbeat || !bytes.HasPrefix(b, magic) {
		return hb, ErrMalformed
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	m := hmac.New(sha256.New, key)
	m.Write(body)
	if !hmac.Equal(m.Sum(nil), sum) {
		return hb, ErrBadMAC
	}
	if err := json.Unmarshal(body[len(magic):], &hb); err != nil {
		return hb, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if hb.Host == "" {
		return hb, fmt.Errorf("%w: no host", ErrMalformed)
	}
	return hb, nil
}
