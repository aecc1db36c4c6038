package source

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/kubeclient"
)

// BackendTLSPolicies (gateway/backendtls.go), watched when the apiserver
// serves them in v1 (RouteVersions under KindBackendTLSPolicy), and the
// ConfigMaps holding their CA bundles: every ConfigMap is cached with its
// ca.crt key only (a few kilobytes where there is one, the name
// elsewhere), so a pass reads nothing from the apiserver.

// KindBackendTLSPolicy keys the served version of BackendTLSPolicy in
// RouteVersions' map.
const KindBackendTLSPolicy = "BackendTLSPolicy"

// btlsSet is the BackendTLSPolicy part of a generation of the source.
type btlsSet struct {
	policies   cache.SharedIndexInformer
	configMaps cache.SharedIndexInformer
}

// buildBackendTLS adds the policies' and ConfigMaps' informers to set.
// The ConfigMaps are watched without the policies too: a Gateway's
// client certificate validation reads its CA bundles from them
// (gateway/clientauth.go).
func (g *Gateway) buildBackendTLS(set *gatewaySet, gf gwinformers.SharedInformerFactory) {
	f := informers.NewSharedInformerFactoryWithOptions(kubeclient.PlainLists(g.client), 0, informers.WithTransform(caTransform))
	set.btls.configMaps = f.Core().V1().ConfigMaps().Informer()
	set.starters = append(set.starters, f)
	set.informers = append(set.informers, set.btls.configMaps)
	if g.routes[KindBackendTLSPolicy] != RouteV1 {
		return
	}
	set.btls.policies = gf.Gateway().V1().BackendTLSPolicies().Informer()
	set.informers = append(set.informers, set.btls.policies)
}

// caTransform keeps of a ConfigMap its name, its CA bundle key and, when
// it may be a list of response headers (ingress.HeaderData: at most 32
// header names and 16 KiB), the rest of its data, for custom-headers.
func caTransform(obj any) (any, error) {
	c, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return obj, nil
	}
	out := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name, UID: c.UID,
		ResourceVersion: c.ResourceVersion}}
	out.Data = ingress.HeaderData(c.Data, gateway.CAKey)
	if v, ok := c.Data[gateway.CAKey]; ok {
		if out.Data == nil {
			out.Data = map[string]string{}
		}
		out.Data[gateway.CAKey] = v
	}
	return out, nil
}

// backendTLSInput fills in's policies and ConfigMaps from set.
func backendTLSInput(set *gatewaySet, in *gateway.Input) {
	in.BackendTLSPolicies = listOf[*gwv1.BackendTLSPolicy](set.btls.policies)
	in.ConfigMaps = listOf[*corev1.ConfigMap](set.btls.configMaps)
}
