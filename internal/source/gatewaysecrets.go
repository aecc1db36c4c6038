package source

import (
	"crypto/tls"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
)

// secretTransform keeps of a Secret only its name and whether it holds a
// certificate and key (type kubernetes.io/tls, tls.crt and tls.key that
// parse as a pair): all the gateway mode reads of Secrets (the
// certificateRefs of HTTPS listeners, status only). No key material stays
// in the cache.
func secretTransform(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil // a DeletedFinalStateUnknown: keyed as it is
	}
	valid := false
	if s.Type == corev1.SecretTypeTLS {
		_, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
		valid = err == nil
	}
	return &gateway.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, UID: s.UID,
		ResourceVersion: s.ResourceVersion}, ValidTLS: valid}, nil
}
