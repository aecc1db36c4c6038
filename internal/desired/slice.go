package desired

import (
	"net/netip"
	"unique"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Slice is what the desired state reads of an EndpointSlice, in a form
// that costs a fraction of the API object: at tens of thousands of
// EndpointSlices the informer cache holds these instead (see
// source.Slim). Addresses are parsed and endpoint conditions reduced to
// one state once, when the object arrives, not on every pass.
type Slice struct {
	// SliceMeta carries only Name, Namespace, UID and ResourceVersion:
	// enough for the informer's keys (slicemeta.go).
	SliceMeta
	Service   string // the kubernetes.io/service-name label; "" for none
	FQDN      bool   // addressType FQDN: no address can be a server
	Endpoints []Endpoint
	Ports     []SlicePort
	// Skipped says why endpoint addresses are no servers (unparsable,
	// unspecified, multicast, broadcast, zoned): the first few, for
	// Result.Skipped; nil when every address is one.
	Skipped []string
}

// maxSkipped bounds Slice.Skipped: a hostile slice of a thousand bad
// addresses costs three messages.
const maxSkipped = 3

// Endpoint is one endpoint of a Slice.
type Endpoint struct {
	Addr  netip.Addr // the first address; invalid when unparsable or FQDN
	Node  string     // nodeName; "" when unset
	State EndpointState
}

// SlicePort is one port of a Slice.
type SlicePort struct {
	Name string
	Port int32 // 0 when unset, or when the name is unset
	TCP  bool  // protocol TCP (or unset)
	UDP  bool  // protocol UDP
}

// EndpointState is what an endpoint contributes: a server in service, a
// server that drains, or nothing.
type EndpointState uint8

const (
	epGone EndpointState = iota
	epDrain
	epReady
)

// SliceOf converts an EndpointSlice. Node names are shared between slices.
func SliceOf(s *discoveryv1.EndpointSlice) *Slice {
	out := &Slice{
		SliceMeta: SliceMeta{Name: s.Name, Namespace: s.Namespace, UID: s.UID, ResourceVersion: s.ResourceVersion},
		Service:   s.Labels[discoveryv1.LabelServiceName],
		FQDN:      s.AddressType == discoveryv1.AddressTypeFQDN,
		Endpoints: make([]Endpoint, len(s.Endpoints)),
	}
	for i, e := range s.Endpoints {
		ep := Endpoint{State: stateOf(e)}
		if len(e.Addresses) > 0 && !out.FQDN {
			var why string
			if ep.Addr, why = badAddress(e.Addresses[0]); why != "" && len(out.Skipped) < maxSkipped {
				out.Skipped = append(out.Skipped, why)
			}
		}
		if e.NodeName != nil {
			ep.Node = intern(*e.NodeName)
		}
		out.Endpoints[i] = ep
	}
	if len(s.Ports) > 0 {
		out.Ports = make([]SlicePort, len(s.Ports))
		for i, p := range s.Ports {
			sp := SlicePort{TCP: p.Protocol == nil || *p.Protocol == corev1.ProtocolTCP,
				UDP: p.Protocol != nil && *p.Protocol == corev1.ProtocolUDP}
			// A port without a name (nil, not "") is ignored, as kube-proxy
			// ignores it: Port 0 never matches a Service port.
			if p.Name != nil && p.Port != nil {
				sp.Name, sp.Port = *p.Name, *p.Port
			}
			out.Ports[i] = sp
		}
	}
	return out
}

// SlicesOf converts EndpointSlices.
func SlicesOf(in []*discoveryv1.EndpointSlice) []*Slice {
	out := make([]*Slice, len(in))
	for i, s := range in {
		out[i] = SliceOf(s)
	}
	return out
}

func stateOf(e discoveryv1.Endpoint) EndpointState {
	c := e.Conditions
	// A nil condition means "unknown", which the API says to read as true
	// (for terminating: false).
	ready := c.Ready == nil || *c.Ready
	serving := c.Serving == nil || *c.Serving
	terminating := c.Terminating != nil && *c.Terminating
	// As kube-proxy reads them: ready wins, even while terminating (the
	// controller writes that only for publishNotReadyAddresses Services);
	// else a serving, terminating endpoint drains.
	switch {
	case ready:
		return epReady
	case serving && terminating:
		return epDrain
	}
	return epGone
}

// intern shares the bytes of equal node names (a cluster has few nodes and
// many endpoints) through the runtime's weak canonicalisation map, which
// forgets a name no longer in use: no global map of this package grows.
func intern(s string) string {
	return unique.Make(s).Value()
}
