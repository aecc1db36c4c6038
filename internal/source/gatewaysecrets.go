package source

import (
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// Secrets in the gateway mode: every Secret is cached as a
// gateway.Secret, its name and whether it holds a certificate and key
// that certs.Parse takes (and why not), and, for a valid
// kubernetes.io/tls Secret, its checked bundle (the PEM HAProxy loads,
// a few kilobytes). A Secret a listener or an Ingress names at any time
// (a new Gateway, a new ref, the controller's start) is read from the
// informer's cache: never a GET, so the role needs only list and watch
// on Secrets (deploy/gateway/rbac.yaml), and a pass reads nothing from
// the apiserver. The cost is memory: every TLS Secret of the cluster
// keeps its bundle, not only those named (about 3 KiB for an ECDSA leaf
// with its intermediate and key).

// secretState is the Gateway source's part for Secrets: the version of
// each named Secret whose problem was logged.
type secretState struct {
	mu     sync.Mutex
	warned map[gateway.Key]string
	log    *slog.Logger // nil: slog.Default()
}

// secretTransform keeps of a Secret only what gateway.Secret holds.
func (g *Gateway) secretTransform(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil // a DeletedFinalStateUnknown: keyed as it is
	}
	return toSecret(s, time.Now()), nil
}

// toSecret checks s and keeps its bundle when it is valid.
func toSecret(s *corev1.Secret, now time.Time) *gateway.Secret {
	out := &gateway.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, UID: s.UID,
		ResourceVersion: s.ResourceVersion}}
	out.CA, out.CAProblem = ingress.SecretCA(s) // an Ingress's backend TLS
	if s.Type != corev1.SecretTypeTLS {
		out.Problem = "not of type " + string(corev1.SecretTypeTLS)
		if a, ok := s.Data[ingress.AuthKey]; ok && len(a) <= ingress.MaxAuthFile {
			out.Auth = a
		}
		return out
	}
	b, err := certs.Parse(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey], now)
	if err != nil {
		out.Problem = err.Error() // names the problem, never the bytes
		return out
	}
	out.ValidTLS, out.Bundle = true, &b
	return out
}

// secretsFor lists the cached Secrets for gws, and logs those the
// listeners (and Ingresses) name that serve no certificate or an
// expired one.
func (g *Gateway) secretsFor(list []*gateway.Secret, gws []*gwv1.Gateway) []*gateway.Secret {
	want := gateway.CertSecrets(gws)
	g.ingressSecrets(want)
	st := &g.secretState
	st.mu.Lock()
	defer st.mu.Unlock()
	st.warnNamed(list, want, time.Now())
	return list
}

// warnNamed logs, once per version, a Secret an HTTPS listener names that
// holds no valid certificate (the listener's ResolvedRefs says so too) or
// an expired one (served all the same). Called with st.mu held.
func (st *secretState) warnNamed(list []*gateway.Secret, want map[gateway.Key]bool, now time.Time) {
	log := st.log
	if log == nil {
		log = slog.Default()
	}
	warned := make(map[gateway.Key]string, len(st.warned))
	for _, s := range list {
		k := gateway.Key{Namespace: s.Namespace, Name: s.Name}
		if !want[k] {
			continue
		}
		bad, expired := !s.ValidTLS, s.Bundle != nil && s.Bundle.Expired(now)
		if !bad && !expired {
			continue
		}
		warned[k] = s.ResourceVersion
		if st.warned[k] == s.ResourceVersion {
			continue
		}
		if bad {
			log.Warn("a Secret an HTTPS listener names holds no valid certificate; its last valid one keeps serving",
				"secret", k.String(), "reason", s.Problem)
		} else {
			log.Warn("a Secret an HTTPS listener names holds an expired certificate; it is served", "secret", k.String(),
				"not_after", s.Bundle.NotAfter)
		}
	}
	st.warned = warned
}
