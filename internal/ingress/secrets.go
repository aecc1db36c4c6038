package ingress

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
)

// Certificates checks Secrets (render's, read from files) into
// Input.Certs and Input.Problems: a kubernetes.io/tls Secret whose
// tls.crt and tls.key certs.Parse takes, else why not.
func Certificates(secrets []*corev1.Secret, now time.Time) (map[Key]*certs.Bundle, map[Key]string) {
	ok, bad := map[Key]*certs.Bundle{}, map[Key]string{}
	for _, s := range secrets {
		k := Key{s.Namespace, s.Name}
		if s.Type != corev1.SecretTypeTLS {
			bad[k] = "not of type " + string(corev1.SecretTypeTLS)
			continue
		}
		b, err := certs.Parse(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey], now)
		if err != nil {
			bad[k] = err.Error() // names the problem, never the bytes
			continue
		}
		ok[k] = &b
	}
	return ok, bad
}

// AuthFiles are Input.Auth from Secrets (render's, read from files): the
// key AuthKey of each Secret not of type kubernetes.io/tls that has one
// of at most MaxAuthFile bytes, as the gateway source keeps them.
func AuthFiles(secrets []*corev1.Secret) map[Key][]byte {
	out := map[Key][]byte{}
	for _, s := range secrets {
		if a, ok := s.Data[AuthKey]; ok && s.Type != corev1.SecretTypeTLS && len(a) <= MaxAuthFile {
			out[Key{s.Namespace, s.Name}] = a
		}
	}
	return out
}
