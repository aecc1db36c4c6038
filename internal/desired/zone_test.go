package desired

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An address with an IPv6 zone (text a node's status may carry, local to
// one host) is no server: found by the nftables fuzz target, where the
// zone went into the rendered ruleset as it was.
func TestZonedAddressIsNoServer(t *testing.T) {
	got, _ := nodeAddrs([]*corev1.Node{node("n1", "fe80::1%eth0;drop", true, nil), node("n2", "192.0.2.2", true, nil)})
	if _, ok := got["n1"]; ok {
		t.Errorf("a zoned InternalIP became a node address: %+v", got["n1"])
	}
	if _, ok := got["n2"]; !ok {
		t.Errorf("n2 lost")
	}
	s := SliceOf(&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "d"},
		AddressType: discoveryv1.AddressTypeIPv6, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"fe80::1%x"}}}})
	if len(s.Endpoints) == 1 && s.Endpoints[0].Addr.IsValid() {
		t.Errorf("a zoned endpoint address parsed: %v", s.Endpoints[0].Addr)
	}
}
