package bgp

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/osrg/gobgp/v4/api"
)

// Refusal is a router refusing this host's session at the protocol
// level: it sent a NOTIFICATION (an OPEN it does not accept: a wrong AS
// number, router ID or hold time, or a Cease), or this speaker refused
// what the router sent (a peer AS other than configured, a malformed
// message). A session that is only unreachable is no refusal: it is
// tried again quietly.
type Refusal struct {
	Peer   netip.Addr
	Reason string // GoBGP's disconnect reason, e.g. "notification received"
	Detail string // GoBGP's words, e.g. the NOTIFICATION's code and subcode
}

// refusedReasons are the disconnect reasons that are a refusal.
var refusedReasons = map[api.PeerState_DisconnectReason]bool{
	api.PeerState_DISCONNECT_REASON_NOTIFICATION_RECEIVED: true,
	api.PeerState_DISCONNECT_REASON_NOTIFICATION_SENT:     true,
	api.PeerState_DISCONNECT_REASON_BAD_PEER_AS:           true,
	api.PeerState_DISCONNECT_REASON_INVALID_MSG:           true,
}

// refusalOf is the Refusal a session going down with reason is, if it
// is one.
func refusalOf(peer netip.Addr, reason api.PeerState_DisconnectReason, detail string) (Refusal, bool) {
	if !refusedReasons[reason] {
		return Refusal{}, false
	}
	r := strings.ToLower(strings.TrimPrefix(reason.String(), "DISCONNECT_REASON_"))
	return Refusal{Peer: peer, Reason: strings.ReplaceAll(r, "_", " "), Detail: detail}, true
}

// Message says the refusal in one line (an Event's message), for the
// speaker named by its router ID. (GoBGP reports a NOTIFICATION that
// answers its OPEN, such as BIRD's "bad peer AS", as an invalid message
// without the NOTIFICATION's code: a message out of turn for its state
// machine.)
func (r Refusal) Message(routerID netip.Addr) string {
	why := r.Reason
	if d := strings.ReplaceAll(r.Detail, "-", " "); d != "" && d != r.Reason {
		why += ": " + r.Detail
	}
	return fmt.Sprintf("router %s refused the BGP session of %s (%s): the addresses are not announced to it", r.Peer, routerID, why)
}

// RefusalRecorder is a Recorder that also counts refusals
// (internal/metrics.Announce).
type RefusalRecorder interface {
	Refused(peer, reason string)
}

// refused records r: counted every time, told to OnRefused once until
// the session with its router is established again or the reason
// changes (a router refusing every try is one Event, not one per try).
func (a *Announcer) refused(r Refusal, told map[string]string) {
	a.log.Warn("session refused", "peer", r.Peer, "reason", r.Reason, "detail", r.Detail)
	if rr, ok := a.cfg.Metrics.(RefusalRecorder); ok {
		rr.Refused(r.Peer.String(), r.Reason)
	}
	if told[r.Peer.String()] == r.Reason {
		return
	}
	told[r.Peer.String()] = r.Reason
	if a.cfg.OnRefused != nil {
		a.cfg.OnRefused(r)
	}
}
