package cli

import (
	"fmt"
	"io"
	"slices"
	"time"

	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/objects"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// renderIngresses adds the Ingresses of set to cfg as run --mode=gateway
// --ingress-class serves them (on ports 80 and 443, every address), and
// writes on stderr each Warning an Ingress would get: an annotation not
// supported or refused, a backend or Secret that does not resolve; and
// each a ConfigMap of opts (--ingress-proxy-set-headers,
// --ingress-add-headers, read from the input) would get.
// Without IngressClasses in the input, every class the Ingresses name is
// taken as this controller's. render writes no certificate files: an
// HTTPS frontend is left out, with a warning.
func renderIngresses(cfg *model.Config, set objects.Set, opts ingress.Options, stderr io.Writer) {
	in := ingress.Input{Classes: set.IngressClasses, Ingresses: set.Ingresses, Services: set.Services, Slices: desired.SlicesOf(set.EndpointSlices)}
	in.Certs, in.Problems = ingress.Certificates(set.Secrets, time.Now())
	in.Auth = ingress.AuthFiles(set.Secrets)
	in.CAs, in.CAProblems = ingress.CAFiles(set.Secrets)
	in.ConfigMaps = ingress.HeaderConfigMaps(set.ConfigMaps)
	if len(in.Classes) == 0 {
		add := func(n string) {
			if n != "" && !slices.ContainsFunc(in.Classes, func(c *netv1.IngressClass) bool { return c.Name == n }) {
				in.Classes = append(in.Classes, &netv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: netv1.IngressClassSpec{Controller: ingress.ControllerName}})
			}
		}
		for _, ing := range set.Ingresses {
			add(ing.Annotations[ingress.ClassAnnotation])
			if ing.Spec.IngressClassName != nil {
				add(*ing.Spec.IngressClassName)
			}
		}
	}
	res := ingress.Compile(in, opts)
	for _, ev := range res.Events {
		fmt.Fprintf(stderr, "warning: Ingress %s: %s: %s\n", settings.ShowName(ev.Ingress.String()), ev.Reason, ev.Message)
	}
	for _, ev := range res.ConfigMapEvents {
		fmt.Fprintf(stderr, "warning: ConfigMap %s: %s: %s\n", settings.ShowName(ev.Ingress.String()), ev.Reason, ev.Message)
	}
	res.Frontends = slices.DeleteFunc(res.Frontends, func(f model.Frontend) bool {
		if f.TLS != nil {
			fmt.Fprintf(stderr, "warning: Ingresses' HTTPS frontend %s not rendered: render writes no certificate files (run serves it)\n", f.Name)
			return true
		}
		return false
	})
	for _, c := range ingress.Merge(cfg, res) {
		fmt.Fprintf(stderr, "warning: Ingresses' %s\n", c)
	}
}
