package desired

import (
	"net/netip"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSliceOf(t *testing.T) {
	yes, no := true, false
	node, name, port, udp := "n1", "http", int32(8080), corev1.ProtocolUDP
	in := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "web-x", ResourceVersion: "7", Labels: map[string]string{discoveryv1.LabelServiceName: "web", "other": "dropped"}, Annotations: map[string]string{"a": "b"}},
		AddressType: discoveryv1.AddressTypeIPv6,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"::ffff:10.0.0.1"}, NodeName: &node},                                                                  // nil conditions: ready
			{Addresses: []string{"fd00::2"}, Conditions: discoveryv1.EndpointConditions{Ready: &no, Serving: &yes, Terminating: &yes}}, // draining
			{Addresses: []string{"not-an-ip"}, Conditions: discoveryv1.EndpointConditions{Ready: &no, Serving: &no}},                   // gone
			{},
		},
		Ports: []discoveryv1.EndpointPort{{Name: &name, Port: &port}, {Protocol: &udp}},
	}
	want := &Slice{
		SliceMeta: SliceMeta{Namespace: "ns", Name: "web-x", ResourceVersion: "7"},
		Service:   "web",
		Endpoints: []Endpoint{
			{Addr: netip.MustParseAddr("10.0.0.1"), Node: "n1", State: epReady},
			{Addr: netip.MustParseAddr("fd00::2"), State: epDrain},
			{State: epGone},
			{State: epReady},
		},
		Ports:   []SlicePort{{Name: "http", Port: 8080, TCP: true}, {UDP: true}},
		Skipped: []string{`"not-an-ip" is not an IP address`},
	}
	if got := SliceOf(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("SliceOf = %+v\nwant %+v", got, want)
	}
	in.AddressType = discoveryv1.AddressTypeFQDN
	in.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.9"}}}
	if got := SliceOf(in); !got.FQDN || got.Endpoints[0].Addr.IsValid() {
		t.Fatalf("FQDN slice: %+v", got)
	}
}
