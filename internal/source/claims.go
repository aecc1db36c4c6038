package source

import (
	"context"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/claims"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/kubeclient"
)

// ServesIPAddresses reports whether the apiserver serves
// networking.k8s.io/v1 IPAddresses (Kubernetes 1.33 and later), where the
// address claims are kept (internal/claims).
func ServesIPAddresses(d discovery.DiscoveryInterface) (bool, error) {
	rl, err := d.ServerResourcesForGroupVersion(networkingv1.SchemeGroupVersion.String())
	if err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	for _, r := range rl.APIResources {
		if r.Name == "ipaddresses" {
			return true, nil
		}
	}
	return false, nil
}

// claimsInformer watches our address claims only (claims.Selector).
func claimsInformer(client kubernetes.Interface) (informers.SharedInformerFactory, cache.SharedIndexInformer) {
	f := informers.NewSharedInformerFactoryWithOptions(kubeclient.PlainLists(client), 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = claims.Selector }),
		informers.WithTransform(func(obj any) (any, error) {
			if m, ok := obj.(metav1.Object); ok {
				m.SetManagedFields(nil)
			}
			return obj, nil
		}))
	return f, f.Networking().V1().IPAddresses().Informer()
}

// existence looks a claim's object up in the informer of its kind (nil:
// a kind not watched); classes: the IngressClasses (cluster-scoped).
func existence(services, gateways, classes cache.SharedIndexInformer, p claims.Parent) claims.Existence {
	var inf cache.SharedIndexInformer
	key := p.Namespace + "/" + p.Name
	switch p.Kind {
	case claims.Service:
		inf = services
	case claims.Gateway:
		inf = gateways
	case claims.IngressClass:
		inf, key = classes, p.Name
	}
	if inf == nil {
		return claims.Unknown
	}
	o, ok, err := inf.GetStore().GetByKey(key)
	if err != nil {
		return claims.Unknown
	}
	if m, isMeta := o.(metav1.Object); ok && isMeta && m.GetUID() == p.UID {
		return claims.Exists
	}
	return claims.Gone
}

// WithClaims also watches the address claims (with WithPools, where the
// apiserver serves IPAddresses: ServesIPAddresses). Call before OnChange
// and Start.
func (s *Source) WithClaims() {
	s.claimsOn = true
	s.rebuild(s.build)
}

// Claims lists the cached claims (none without WithClaims), shared with
// the cache: not to be modified.
func (s *Source) Claims() []*networkingv1.IPAddress {
	return listOf[*networkingv1.IPAddress](s.current().claims)
}

// Exists is whether a claim's object is in the caches (a Gateway only
// with WithGateways).
func (s *Source) Exists(p claims.Parent) claims.Existence {
	if p.Kind == claims.Service && s.namespace != "" && p.Namespace != s.namespace {
		return claims.Unknown // not watched
	}
	set := s.current()
	return existence(set.services, set.gateways, nil, p)
}

// WithClaims also watches the address claims (with WithPools, where the
// apiserver serves IPAddresses). Call before OnChange and Start.
func (g *Gateway) WithClaims() {
	g.claimsOn = true
	g.rebuild(g.build)
}

// Claims lists the cached claims (none without WithClaims).
func (g *Gateway) Claims() []*networkingv1.IPAddress {
	return listOf[*networkingv1.IPAddress](g.current().claims)
}

// Exists is whether a claim's object is in the caches.
func (g *Gateway) Exists(p claims.Parent) claims.Existence {
	set := g.current()
	return existence(set.services, set.gateways, set.ing.classes, p)
}

// lister lists one kind's objects of a namespace.
type lister func(ctx context.Context, ns string, o metav1.ListOptions) ([]metav1.Object, error)

// lookup is whether p exists, by a consistent read: a list by name (the
// roles grant list, not get) through the lister of its kind (nil: a kind
// not watched).
func lookup(ctx context.Context, p claims.Parent, services, gateways, classes lister) (claims.Existence, error) {
	var list lister
	switch p.Kind {
	case claims.Service:
		list = services
	case claims.Gateway:
		list = gateways
	case claims.IngressClass:
		list = classes
	}
	if list == nil {
		return claims.Unknown, nil
	}
	objs, err := list(ctx, p.Namespace, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", p.Name).String()})
	if err != nil {
		return claims.Unknown, err
	}
	for _, o := range objs {
		if o.GetName() == p.Name && o.GetUID() == p.UID {
			return claims.Exists, nil
		}
	}
	return claims.Gone, nil
}

// objects is a list's items as metav1.Objects (pointers into items).
func objects[T any, PT interface {
	*T
	metav1.Object
}](items []T) []metav1.Object {
	out := make([]metav1.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}

func listServices(c kubernetes.Interface) lister {
	return func(ctx context.Context, ns string, o metav1.ListOptions) ([]metav1.Object, error) {
		l, err := c.CoreV1().Services(ns).List(ctx, o)
		if err != nil {
			return nil, err
		}
		return objects(l.Items), nil
	}
}

// Lookup is whether a claim's object exists, by a consistent read of the
// apiserver (claims.Cache).
func (s *Source) Lookup(ctx context.Context, p claims.Parent) (claims.Existence, error) {
	var services, gateways lister
	if s.namespace == "" || p.Namespace == s.namespace {
		services = listServices(s.client)
	}
	if s.gwOn {
		gateways = func(ctx context.Context, ns string, o metav1.ListOptions) ([]metav1.Object, error) {
			l, err := s.dyn.Resource(GatewayGVR).Namespace(ns).List(ctx, o)
			if err != nil {
				return nil, err
			}
			return objects(l.Items), nil
		}
	}
	return lookup(ctx, p, services, gateways, nil)
}

// Lookup is whether a claim's object exists, by a consistent read of the
// apiserver (claims.Cache).
func (g *Gateway) Lookup(ctx context.Context, p claims.Parent) (claims.Existence, error) {
	var classes lister
	if g.ingressOn { // the Ingresses' role lists IngressClasses
		classes = func(ctx context.Context, _ string, o metav1.ListOptions) ([]metav1.Object, error) {
			l, err := g.client.NetworkingV1().IngressClasses().List(ctx, o)
			if err != nil {
				return nil, err
			}
			return objects(l.Items), nil
		}
	}
	return lookup(ctx, p, listServices(g.client), func(ctx context.Context, ns string, o metav1.ListOptions) ([]metav1.Object, error) {
		l, err := g.gc.GatewayV1().Gateways(ns).List(ctx, o)
		if err != nil {
			return nil, err
		}
		return objects(l.Items), nil
	}, classes)
}
