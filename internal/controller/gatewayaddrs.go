package controller

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// gatewayReservations are the Gateways' requests as the gateway mode
// makes them (pools.GatewayRequest), reservations only here
// (pools.Reservation): the addresses their status lists or they ask for
// stay theirs when they are older, so a Service
// never gets a Gateway's address unless both share an allow-shared-ip
// key and no port clashes, and both controllers compute one allocation.
func gatewayReservations(objs []*unstructured.Unstructured, nsLabels map[string]map[string]string) []pools.Request {
	out := make([]pools.Request, 0, len(objs))
	for _, o := range objs {
		var g gwv1.Gateway
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &g); err != nil {
			continue // not a Gateway we can read: it holds nothing here
		}
		r, _ := pools.GatewayRequest(&g, nsLabels[g.Namespace])
		out = append(out, pools.Reservation(r))
	}
	return out
}
