package source

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/kubeclient"
)

// Ingresses beside the Gateways (run --mode=gateway --ingress-class): the
// IngressClasses and Ingresses (networking.k8s.io/v1) are watched too,
// and the Secrets their TLS sections name (and the default certificate)
// keep their checked bundle as an HTTPS listener's do (gatewaysecrets.go).

// ingressSet is the Ingress part of a generation of the Gateway source.
type ingressSet struct {
	ingresses cache.SharedIndexInformer
	classes   cache.SharedIndexInformer
}

// WithIngress also watches IngressClasses and Ingresses; the Secret
// defaultCert (zero: none) keeps its bundle. Call before OnChange and
// Start.
func (g *Gateway) WithIngress(defaultCert gateway.Key) {
	g.ingressOn, g.ingressCert = true, defaultCert
	g.rebuild(g.build)
}

// buildIngress adds the Ingress informers to set.
func (g *Gateway) buildIngress(set *gatewaySet) {
	if !g.ingressOn {
		return
	}
	f := informers.NewSharedInformerFactoryWithOptions(kubeclient.PlainLists(g.client), 0, informers.WithTransform(func(obj any) (any, error) {
		if m, ok := obj.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		return obj, nil
	}))
	set.ing.ingresses = f.Networking().V1().Ingresses().Informer()
	// Not started yet: AddIndexers cannot fail.
	_ = set.ing.ingresses.AddIndexers(cache.Indexers{tlsSecretIndex: tlsSecrets, headersIndex: headerConfigMaps})
	set.ing.classes = f.Networking().V1().IngressClasses().Informer()
	set.starters = append(set.starters, f)
	set.informers = append(set.informers, set.ing.ingresses, set.ing.classes)
}

// Ingresses lists the cached IngressClasses and Ingresses (none without
// WithIngress), shared with the caches: not to be modified.
func (g *Gateway) Ingresses() ([]*netv1.IngressClass, []*netv1.Ingress) {
	set := g.current()
	return listOf[*netv1.IngressClass](set.ing.classes), listOf[*netv1.Ingress](set.ing.ingresses)
}

// IngressObject is the cached Ingress namespace/name, for the status
// writer.
func (g *Gateway) IngressObject(namespace, name string) (*netv1.Ingress, bool) {
	inf := g.current().ing.ingresses
	if inf == nil {
		return nil, false
	}
	o, ok, err := inf.GetStore().GetByKey(namespace + "/" + name)
	if !ok || err != nil {
		return nil, false
	}
	ing, ok := o.(*netv1.Ingress)
	return ing, ok
}

// tlsSecretIndex indexes the cached Ingresses by the Secrets their TLS
// sections name ("namespace/name"): a pass reads the names from the
// index, not from every Ingress.
const tlsSecretIndex = "tlsSecret"

// tlsSecrets is the index function of tlsSecretIndex.
func tlsSecrets(obj any) ([]string, error) {
	ing, ok := obj.(*netv1.Ingress)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, t := range ing.Spec.TLS {
		if t.SecretName != "" {
			out = append(out, ing.Namespace+"/"+t.SecretName)
		}
	}
	return out, nil
}

// ingressSecrets adds to want the Secrets the cached Ingresses' TLS
// sections name, and the default certificate's.
func (g *Gateway) ingressSecrets(want map[gateway.Key]bool) {
	if !g.ingressOn {
		return
	}
	if g.ingressCert.Name != "" {
		want[g.ingressCert] = true
	}
	inf := g.current().ing.ingresses
	if inf == nil {
		return
	}
	for _, v := range inf.GetIndexer().ListIndexFuncValues(tlsSecretIndex) {
		if ns, name, ok := strings.Cut(v, "/"); ok {
			want[gateway.Key{Namespace: ns, Name: name}] = true
		}
	}
}

// headersIndex indexes the cached Ingresses by the ConfigMap their
// custom-headers names ("namespace/name"): a pass reads only those.
const headersIndex = "customHeaders"

// headerConfigMaps is the index function of headersIndex.
func headerConfigMaps(obj any) ([]string, error) {
	ing, ok := obj.(*netv1.Ingress)
	if !ok {
		return nil, nil
	}
	if k, ok := ingress.CustomHeadersRef(ing.Namespace, ing.Annotations); ok {
		return []string{k.String()}, nil
	}
	return nil, nil
}

// WithIngressConfigMaps names ConfigMaps of headers the Ingress
// compiler reads beside those the Ingresses name (the controller-wide
// headers: ingress.Options.ProxySetHeaders, AddHeaders). Call before
// Run.
func (g *Gateway) WithIngressConfigMaps(keys ...ingress.Key) {
	for _, k := range keys {
		if k != (ingress.Key{}) {
			g.ingressCMs = append(g.ingressCMs, k.String())
		}
	}
}

// IngressConfigMaps are the cached ConfigMaps the Ingresses'
// custom-headers name and those WithIngressConfigMaps names (with their
// header data only), shared with the cache: not to be modified.
func (g *Gateway) IngressConfigMaps() map[ingress.Key]*corev1.ConfigMap {
	set := g.current()
	out := map[ingress.Key]*corev1.ConfigMap{}
	if set.ing.ingresses == nil || set.btls.configMaps == nil {
		return out
	}
	for _, v := range append(set.ing.ingresses.GetIndexer().ListIndexFuncValues(headersIndex), g.ingressCMs...) {
		o, ok, err := set.btls.configMaps.GetStore().GetByKey(v)
		if cm, isCM := o.(*corev1.ConfigMap); ok && err == nil && isCM {
			out[ingress.Key{Namespace: cm.Namespace, Name: cm.Name}] = cm
		}
	}
	return out
}
