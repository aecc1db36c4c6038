package source

import (
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
)

// Route versions the Gateway API source reads.
const (
	RouteV1       = "v1"       // the standard channel since Gateway API v1.6 (TLSRoute v1.5)
	RouteV1Alpha2 = "v1alpha2" // older bundles (experimental channel)
)

var routeResources = map[string]string{
	gateway.KindTCPRoute: "tcproutes",
	gateway.KindTLSRoute: "tlsroutes",
	gateway.KindUDPRoute: "udproutes",
	// HTTPRoutes are served on HTTP listeners; watched when v1 is
	// served.
	gateway.KindHTTPRoute: "httproutes",
	// GRPCRoutes too, on the same listeners (v1 only).
	gateway.KindGRPCRoute: "grpcroutes",
	// Not a route: BackendTLSPolicies (v1 only, gatewaybtls.go).
	KindBackendTLSPolicy: "backendtlspolicies",
	// Nor ListenerSets (v1 only, gatewaylistenersets.go).
	gateway.KindListenerSet: "listenersets",
}

// RouteVersions asks the apiserver which version of each route kind it
// serves: v1 when it does, else v1alpha2, else "" (the kind is not
// installed: not watched, and no route of it can exist).
func RouteVersions(d discovery.DiscoveryInterface) (map[string]string, error) {
	served := map[string]map[string]bool{}
	for _, v := range []string{RouteV1, RouteV1Alpha2} {
		list, err := d.ServerResourcesForGroupVersion(gwv1.GroupName + "/" + v)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("discovery of %s/%s: %w", gwv1.GroupName, v, err)
		}
		served[v] = map[string]bool{}
		for _, r := range list.APIResources {
			served[v][r.Name] = true
		}
	}
	out := map[string]string{}
	for kind, res := range routeResources {
		switch {
		case served[RouteV1][res]:
			out[kind] = RouteV1
		case served[RouteV1Alpha2][res]:
			out[kind] = RouteV1Alpha2
		default:
			out[kind] = ""
		}
	}
	return out, nil
}

// convert turns an object into another type of the same JSON shape (a
// v1alpha2 route into its v1 form, and back for a status write).
func convert[T any](in any) (*T, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Convert is convert for other packages (the status writer).
func Convert[T any](in any) (*T, error) { return convert[T](in) }
