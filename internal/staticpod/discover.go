package staticpod

import (
	"context"
	"fmt"
	"net/netip"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/apiserverlb"
)

// Sources say where Discover looks, as the flags of run --mode=apiserver.
type Sources struct {
	Order              []string // apiserverlb.ParseSources
	Static             []netip.AddrPort
	Port               uint16 // for nodes, and ConfigMap lines without a port
	ConfigMapNamespace string
	ConfigMapName      string
}

// Discover reads the cluster once and chooses the apiservers as
// run --mode=apiserver would: the first source with a non-empty list wins,
// an invalid source stops the search. It is the only part of this package
// that does I/O (through client).
func Discover(ctx context.Context, client kubernetes.Interface, s Sources) (apiserverlb.Choice, error) {
	found := map[string]apiserverlb.Found{}
	for _, src := range s.Order {
		switch src {
		case apiserverlb.SourceEndpointSlice:
			l, err := client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx,
				metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
			if err != nil {
				return apiserverlb.Choice{}, fmt.Errorf("source %s: %w", src, err)
			}
			found[src] = apiserverlb.Found{Servers: apiserverlb.FromEndpointSlices(pointers(l.Items))}
		case apiserverlb.SourceNodes:
			l, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: apiserverlb.ControlPlaneLabel})
			if err != nil {
				return apiserverlb.Choice{}, fmt.Errorf("source %s: %w", src, err)
			}
			found[src] = apiserverlb.Found{Servers: apiserverlb.FromNodes(pointers(l.Items), s.Port)}
		case apiserverlb.SourceConfigMap:
			cm, err := client.CoreV1().ConfigMaps(s.ConfigMapNamespace).Get(ctx, s.ConfigMapName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				cm, err = nil, nil
			}
			if err != nil {
				return apiserverlb.Choice{}, fmt.Errorf("source %s: %w", src, err)
			}
			servers, err := apiserverlb.FromConfigMap(cm, s.Port)
			found[src] = apiserverlb.Found{Servers: servers, Err: err}
		case apiserverlb.SourceStatic:
			found[src] = apiserverlb.Found{Servers: s.Static}
		}
	}
	d := apiserverlb.Choose(s.Order, found, apiserverlb.Choice{})
	if d.Kept {
		return apiserverlb.Choice{}, fmt.Errorf("%w: no apiservers: %v", ErrInvalid, d.Why)
	}
	return d.Choice, nil
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
