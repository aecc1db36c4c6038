package source

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// GatewayGVR is the Gateway API's Gateway, as the Services mode reads it
// (dynamic: only its addresses, so the Services mode needs no Gateway
// API types, and none of it when the CRD is not installed).
var GatewayGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}

// ServesGateways reports whether the apiserver serves GatewayGVR.
func ServesGateways(d discovery.DiscoveryInterface) (bool, error) {
	rl, err := d.ServerResourcesForGroupVersion(GatewayGVR.GroupVersion().String())
	if err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	for _, r := range rl.APIResources {
		if r.Name == GatewayGVR.Resource {
			return true, nil
		}
	}
	return false, nil
}

// WithGateways also watches the Gateways (with WithPools, after it), so
// that the addresses their status lists are taken for the Services
// (docs/addresses.md: shared with the gateway mode).
func (s *Source) WithGateways() {
	s.gwOn = true
	s.rebuild(s.build)
}

// Gateways lists the cached Gateways (none without WithGateways), shared
// with the cache: not to be modified.
func (s *Source) Gateways() []*unstructured.Unstructured {
	set := s.current()
	if set.gateways == nil {
		return nil
	}
	return listOf[*unstructured.Unstructured](set.gateways)
}
