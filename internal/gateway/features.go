package gateway

import gwv1 "sigs.k8s.io/gateway-api/apis/v1"

// extFeatures are the extended GATEWAY-HTTP features of issue 34 that
// the GatewayClass claims (compute.go adds them to features): each one
// only once the upstream conformance tests for it pass against the data
// path (test/conformance, docs/gateway.md "Extended HTTP features").
// HTTPRouteRetry (retry.go) passes on the experimental channel's CRDs,
// which test/conformance installs (the standard channel's HTTPRoute
// prunes a rule's retry). HTTPRouteRetryBackendTimeout and
// HTTPRouteRetryConnectionError are served too (model.RetryEvents) but
// not claimed: v1.6.3's suite has no test for either.
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
	"HTTPRouteRetry",
	// GATEWAY-TLS: TLS listeners in mode Terminate (tlsterminate.go).
	"TLSRouteModeTerminate",
}
