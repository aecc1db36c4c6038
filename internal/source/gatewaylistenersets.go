package source

import (
	"k8s.io/client-go/tools/cache"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
)

// ListenerSets (gateway/listenerset.go), watched when the apiserver
// serves them in v1 (RouteVersions under gateway.KindListenerSet): a
// cluster with CRDs of an older bundle has none, and its caches still
// sync.

// buildListenerSets adds the ListenerSets' informer to set.
func (g *Gateway) buildListenerSets(set *gatewaySet, gf gwinformers.SharedInformerFactory) {
	if g.routes[gateway.KindListenerSet] != RouteV1 {
		return
	}
	set.lsets = gf.Gateway().V1().ListenerSets().Informer()
	set.informers = append(set.informers, set.lsets)
}

// listenerSetInput fills in's ListenerSets from set.
func listenerSetInput(set *gatewaySet, in *gateway.Input) {
	in.ListenerSets = listOf[*gwv1.ListenerSet](set.lsets)
}

// listenerSetInformer is the ListenerSets' informer for kind, if kind is
// theirs.
func listenerSetInformer(set *gatewaySet, kind string) (cache.SharedIndexInformer, bool) {
	if kind != gateway.KindListenerSet {
		return nil, false
	}
	return set.lsets, true
}
