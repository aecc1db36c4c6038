package bgp

import (
	"context"
	"time"

	"github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/server"
	"google.golang.org/protobuf/proto"
)

// bfd switches BFD on for a peer whose session came up, and off for one
// whose session went down, so that each BGP session has a BFD session
// of its own, new from its Down state. A router such as BIRD starts a
// BFD session of its own with each BGP session; GoBGP's, kept from the
// session before, still Up when the router's new one says Down, resets
// the new BGP session at once, and the two never settle (seen against
// BIRD 2.0.12 after the first failure BFD detected).
func (a *Announcer) bfd(ctx context.Context, s *server.BgpServer, ss session) {
	if a.cfg.BFD <= 0 {
		return
	}
	p, ok := a.peers[ss.peer]
	if !ok {
		return
	}
	p = proto.Clone(p).(*api.Peer)
	us := uint32(a.cfg.BFD / time.Microsecond)
	p.Bfd = &api.BfdPeerConfig{Enabled: ss.up, DesiredMinimumTxInterval: us, RequiredMinimumReceive: us, DetectionMultiplier: 3}
	if _, err := s.UpdatePeer(ctx, &api.UpdatePeerRequest{Peer: p}); err != nil {
		a.log.Warn("switching BFD", "peer", ss.peer, "on", ss.up, "error", err)
	}
}
