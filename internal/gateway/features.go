package gateway

import gwv1 "sigs.k8s.io/gateway-api/apis/v1"

// extFeatures are the extended GATEWAY-HTTP features of issue 34 that
// the GatewayClass claims (compute.go adds them to features): each one
// only once the upstream conformance tests for it pass against the data
// path (test/conformance, docs/gateway.md "Extended HTTP features").
// The retry features are served (retry.go) but not claimed: a rule's
// retry is a field of the experimental channel's HTTPRoute, which the
// standard channel's CRD (what the suite runs against here) prunes, so
// HTTPRouteRetry cannot pass here yet.
var extFeatures = []gwv1.FeatureName{
	"GatewayHTTPListenerIsolation",
	"GatewayHTTPSListenerDetectMisdirectedRequests",
	"GatewayPort8080",
	"HTTPRouteDestinationPortMatching",
	"HTTPRouteNamedRouteRule",
	"HTTPRouteBackendProtocolH2C",
	"HTTPRouteBackendProtocolWebSocket",
	"HTTPRouteBackendRequestHeaderModification",
	"HTTPRouteBackendTimeout",
	"HTTPRouteCORS",
	"HTTPRouteHostRewrite",
	"HTTPRoutePathRedirect",
	"HTTPRoutePathRewrite",
	"HTTPRouteQueryParamMatching",
	"HTTPRouteRequestTimeout",
	"HTTPRouteResponseHeaderModification",
}
