package gateway

import (
	"cmp"
	"slices"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TLS listeners with tls.mode Terminate (TLSRouteModeTerminate): HAProxy
// terminates TLS on the listener's binds with the certificates of its
// certificateRefs (the same crt-list and runtime store as an HTTPS
// listener: tls.go, render/tls.go), then routes the decrypted stream by
// the server name the client sent (ssl_fc_sni: render/routes.go) to the
// TLSRoutes' backends as plain TCP. Until a certificateRef resolves the
// listener binds nothing and is not Programmed, as an HTTPS listener.
// TLS listeners of one port are all Passthrough or all Terminate: both
// on one port (TLSRouteModeMixed) would need a passthrough frontend
// handing the terminated names to a second, terminating one, which is
// not built; both listeners are then refused (Accepted=False,
// ProtocolConflict), as the suite's
// TLSRouteListenerMixedTerminationNotSupported asks.

// terminates reports a TLS listener whose mode is Terminate.
func (l *listener) terminates() bool {
	return l.spec.Protocol == gwv1.TLSProtocolType && l.spec.TLS != nil && l.spec.TLS.Mode != nil &&
		*l.spec.TLS.Mode == gwv1.TLSModeTerminate
}

// tlsListener validates a TLS listener's own fields: Passthrough, or
// Terminate with certificateRefs.
func tlsListener(l *listener) {
	switch {
	case l.spec.TLS == nil || l.spec.TLS.Mode == nil || *l.spec.TLS.Mode == gwv1.TLSModePassthrough:
	case !l.terminates():
		l.reject("UnsupportedValue", "tls.mode must be Passthrough or Terminate")
	case len(l.spec.TLS.CertificateRefs) == 0:
		l.reject("UnsupportedValue", "a TLS listener in mode Terminate needs tls.certificateRefs")
	}
}

// terminating reports a listener whose certificateRefs HAProxy serves:
// HTTPS, or TLS in mode Terminate.
func (l *listener) terminating() bool {
	return (l.spec.Protocol == gwv1.HTTPSProtocolType || l.terminates()) && l.spec.TLS != nil
}

// terminatingSpec is terminating for a listener's spec alone.
func terminatingSpec(s gwv1.Listener) bool { return (&listener{spec: s}).terminating() }

// withTLS adds a terminating listener's certificates (add; nil: none) to
// those of the other listeners of its port (to; nil: none yet): one
// crt-list for the frontend, each certificate once, the first
// listener's default the default.
func withTLS(to, add *model.TLS) *model.TLS {
	if add == nil {
		return to
	}
	if to == nil {
		c := *add
		c.Certificates = slices.Clone(add.Certificates)
		return &c
	}
	for _, c := range add.Certificates {
		if to.Cert(c.Name) == nil {
			to.Certificates = append(to.Certificates, c)
		}
	}
	slices.SortFunc(to.Certificates, func(a, b model.Certificate) int { return cmp.Compare(a.Name, b.Name) })
	return to
}
