package source

import (
	"context"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
)

// Secrets in the gateway mode: every Secret is cached as a
// gateway.Secret, its name and whether it holds a certificate and key
// that certs.Parse takes (and why not). Only the Secrets an HTTPS
// listener of a cached Gateway names (gateway.CertSecrets, computed at
// each Snapshot) keep their checked bundle, the PEM HAProxy loads: not
// every certificate of the cluster stays in memory. A Secret named after
// it was cached (a new Gateway, a new ref) is read once from the
// apiserver (fetchSecrets); its later updates come through the informer
// with their bundle.

// fetchTimeout bounds reading the Secrets a Snapshot newly needs.
const fetchTimeout = 5 * time.Second

// fetchWorkers read them side by side (at start: every named Secret).
const fetchWorkers = 8

// secretState is the Gateway source's part for Secrets.
type secretState struct {
	mu      sync.Mutex
	want    map[gateway.Key]bool            // the Secrets HTTPS listeners name; nil before the first Snapshot
	fetched map[gateway.Key]*gateway.Secret // read by fetchSecrets, while the cache holds that version
	// warned: the version of each named Secret whose problem was logged.
	warned map[gateway.Key]string
	log    *slog.Logger // nil: slog.Default()
}

// wanted reports whether the Secret's bundle is kept.
func (s *secretState) wanted(k gateway.Key) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.want[k]
}

// secretTransform keeps of a Secret only what gateway.Secret holds.
func (g *Gateway) secretTransform(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil // a DeletedFinalStateUnknown: keyed as it is
	}
	return toSecret(s, g.secretState.wanted(gateway.Key{Namespace: s.Namespace, Name: s.Name}), time.Now()), nil
}

// toSecret checks s and keeps its bundle when keep is set.
func toSecret(s *corev1.Secret, keep bool, now time.Time) *gateway.Secret {
	out := &gateway.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, UID: s.UID,
		ResourceVersion: s.ResourceVersion}}
	if s.Type != corev1.SecretTypeTLS {
		out.Problem = "not of type " + string(corev1.SecretTypeTLS)
		return out
	}
	b, err := certs.Parse(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey], now)
	if err != nil {
		out.Problem = err.Error() // names the problem, never the bytes
		return out
	}
	out.ValidTLS = true
	if keep {
		out.Bundle = &b
	}
	return out
}

// secretsFor lists the cached Secrets for gws: those the listeners name
// with their bundles, read from the apiserver when the cache has none.
// A Secret that cannot be read now stays without its bundle (its last
// valid certificate keeps serving, gateway.CertMemo) and is read again
// at the next pass.
func (g *Gateway) secretsFor(list []*gateway.Secret, gws []*gwv1.Gateway) []*gateway.Secret {
	want := gateway.CertSecrets(gws)
	g.ingressSecrets(want)
	st := &g.secretState
	st.mu.Lock()
	st.want = want
	st.mu.Unlock()

	var need []int
	for i, s := range list {
		if s.ValidTLS && s.Bundle == nil && want[gateway.Key{Namespace: s.Namespace, Name: s.Name}] {
			need = append(need, i)
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	kept := make(map[gateway.Key]*gateway.Secret, len(need))
	var missing []int
	for _, i := range need {
		k := gateway.Key{Namespace: list[i].Namespace, Name: list[i].Name}
		if f := st.fetched[k]; f != nil && f.ResourceVersion == list[i].ResourceVersion {
			list[i], kept[k] = f, f
		} else {
			missing = append(missing, i)
		}
	}
	st.fetched = kept
	defer func() { st.warnNamed(list, want, time.Now()) }()
	if len(missing) == 0 || g.client == nil {
		return list
	}
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	got := make([]*gateway.Secret, len(missing))
	var wg sync.WaitGroup
	sem := make(chan struct{}, fetchWorkers)
	for j, i := range missing {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			s, err := g.client.CoreV1().Secrets(list[i].Namespace).Get(ctx, list[i].Name, metav1.GetOptions{})
			if err != nil {
				slog.Warn("could not read a Secret an HTTPS listener names", "secret", list[i].Namespace+"/"+list[i].Name, "err", err)
				return
			}
			got[j] = toSecret(s, true, time.Now())
		}()
	}
	wg.Wait()
	for j, i := range missing {
		if f := got[j]; f != nil {
			list[i] = f
			st.fetched[gateway.Key{Namespace: f.Namespace, Name: f.Name}] = f
		}
	}
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
