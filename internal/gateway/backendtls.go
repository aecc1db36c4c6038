package gateway

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// BackendTLSPolicy: TLS from HAProxy to a Service's Pods
// (model.BackendTLS). A policy targets Services (every port, or the one
// its sectionName names); an HTTPRoute's or GRPCRoute's backend on such a
// port speaks TLS with the policy's hostname as SNI and as the name the
// certificate must carry, verified against the CA bundle of its
// caCertificateRefs (ConfigMaps, key ca.crt). Two policies on one target:
// the older wins, the other is Conflicted. A policy's status has one
// ancestor per Gateway whose routes use a targeted port.
//
// A policy that cannot be served (no valid CA, wellKnownCACertificates,
// subjectAltNames, a bad hostname) makes its backends refuse every
// request (503) rather than go in clear; one that was served and turns
// bad (its ConfigMap deleted or emptied) keeps its last good settings
// (CAMemo), with the condition saying why.

// tlsFeatures are the TLS features of issue 34 the GatewayClass claims
// (compute.go), each once its upstream tests pass (docs/gateway.md).
var tlsFeatures = []gwv1.FeatureName{"BackendTLSPolicy", "GatewayBackendClientCertificate"}

// CAKey is the ConfigMap key holding a CA bundle.
const CAKey = "ca.crt"

// CAMemo remembers each BackendTLSPolicy's last good settings across
// passes. The gateway loop owns it (Options.CAs); nil: no memory. Not
// safe for concurrent use.
type CAMemo struct {
	last map[Key]*model.BackendTLS
	// clients: the client CAs of HTTPS ports (clientauth.go), as the
	// last pass used them; clientsNext: this pass's.
	clients, clientsNext map[clientKey]*model.ClientAuth
}

// btlsPolicy is one BackendTLSPolicy as resolved for this pass.
type btlsPolicy struct {
	obj       *gwv1.BackendTLSPolicy
	tls       *model.BackendTLS // nil: refuse its backends
	accWhy    string            // Accepted False's reason; "": True
	refsWhy   string            // ResolvedRefs False's reason; "": True
	msg       string
	ancestors map[Key]bool
}

type btlsTarget struct {
	svc     Key
	section string // "": every port
}

// resolveBackendTLS resolves in's policies into w.btls.
func (w *world) resolveBackendTLS(in Input, memo *CAMemo) {
	sorted := slices.Clone(in.BackendTLSPolicies)
	slices.SortFunc(sorted, func(a, b *gwv1.BackendTLSPolicy) int {
		return older(&a.ObjectMeta, &b.ObjectMeta, a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	w.btls = map[btlsTarget]*btlsPolicy{}
	w.btlsAll = nil
	w.btlsLost = map[btlsTarget][]*btlsPolicy{}
	keep := map[Key]*model.BackendTLS{}
	for _, obj := range sorted {
		p := &btlsPolicy{obj: obj, ancestors: map[Key]bool{}}
		w.btlsAll = append(w.btlsAll, p)
		k := Key{obj.Namespace, obj.Name}
		p.tls, p.accWhy, p.refsWhy, p.msg = policyTLS(obj, w.configMaps)
		if memo != nil {
			if p.tls == nil && memo.last[k] != nil && p.accWhy == string(gwv1.BackendTLSPolicyReasonNoValidCACertificate) {
				p.tls = memo.last[k]
				p.msg += "; its last valid CA bundle is kept"
			}
			if p.tls != nil {
				keep[k] = p.tls
			}
		}
		for _, t := range obj.Spec.TargetRefs {
			if t.Group != "" && t.Group != "core" || t.Kind != "Service" {
				continue
			}
			tk := btlsTarget{Key{obj.Namespace, string(t.Name)}, ""}
			if t.SectionName != nil {
				tk.section = string(*t.SectionName)
			}
			if _, taken := w.btls[tk]; taken {
				p.accWhy, p.msg = string(gwv1.PolicyReasonConflicted), "an older BackendTLSPolicy targets "+tk.svc.String()+" "+tk.section
				w.btlsLost[tk] = append(w.btlsLost[tk], p)
				continue
			}
			w.btls[tk] = p
		}
	}
	if memo != nil {
		memo.last = keep
	}
}

// policyTLS is what policy p asks for, or why it cannot be served.
func policyTLS(p *gwv1.BackendTLSPolicy, cms map[Key]*corev1.ConfigMap) (t *model.BackendTLS, accWhy, refsWhy, msg string) {
	v := p.Spec.Validation
	host := string(v.Hostname)
	var bundle []byte
	for _, ref := range v.CACertificateRefs {
		if ref.Group != "" && ref.Group != "core" || ref.Kind != "ConfigMap" {
			refsWhy, msg = string(gwv1.BackendTLSPolicyReasonInvalidKind), "caCertificateRefs: only ConfigMaps are read, not "+string(ref.Kind)
			continue
		}
		cm := cms[Key{p.Namespace, string(ref.Name)}]
		pemOut, why := caBundle(cm)
		if why != "" {
			refsWhy, msg = string(gwv1.BackendTLSPolicyReasonInvalidCACertificateRef), "ConfigMap "+p.Namespace+"/"+string(ref.Name)+": "+why
			continue
		}
		bundle = append(bundle, pemOut...)
	}
	switch {
	case v.WellKnownCACertificates != nil:
		return nil, string(gwv1.PolicyReasonInvalid), refsWhy, "wellKnownCACertificates are not supported: name a ConfigMap in caCertificateRefs"
	case len(v.SubjectAltNames) > 0:
		return nil, string(gwv1.PolicyReasonInvalid), refsWhy, "subjectAltNames are not verified by this controller (only the hostname)"
	case !model.ValidSNI(host) || host == "" || host[0] == '*':
		return nil, string(gwv1.PolicyReasonInvalid), refsWhy, "hostname " + host + " is not a server name"
	case len(bundle) == 0:
		if msg == "" {
			msg = "no caCertificateRefs"
		}
		return nil, string(gwv1.BackendTLSPolicyReasonNoValidCACertificate), refsWhy, msg
	}
	// Named for the policy; by its digest too where the servers present
	// no client certificate (withClientCert, cafile.go).
	return &model.BackendTLS{SNI: host, CA: model.Name("ca", p.Namespace, p.Name), CAPEM: bundle}, "", refsWhy, msg
}

// caBundle is the ConfigMap's CA certificates, checked and written again
// as PEM (no blank line, nothing but CERTIFICATE blocks), or why not.
func caBundle(cm *corev1.ConfigMap) ([]byte, string) {
	if cm == nil {
		return nil, "not found"
	}
	out, err := certs.CABundle([]byte(cm.Data[CAKey]))
	if err != nil {
		return nil, CAKey + " " + err.Error()
	}
	return out, ""
}

// tlsSuffix ends the name prefix of a backend speaking TLS ("gwhs",
// "gwgs"): a backend that starts or stops speaking TLS takes another
// name, so a reload never gives it the old one's servers' state. HAProxy
// keeps each server's use of SSL in its server-state file and applies it
// on load over the configuration (seen in the conformance run: a backend
// that became TLS went on sending clear text after the reload).
func tlsSuffix(t *model.BackendTLS) string {
	if t == nil {
		return ""
	}
	return "s"
}

// backendTLS is the TLS the backend of Service svc's port p speaks when
// the routes of the Gateway being served (w.serving) use it, which is
// recorded as the policy's ancestor: nil and false without a policy;
// refuse when a policy cannot be served.
func (w *world) backendTLS(svc Key, p corev1.ServicePort) (t *model.BackendTLS, refuse bool) {
	tk := btlsTarget{svc, p.Name}
	pol := w.btls[tk]
	if pol == nil {
		tk.section = ""
		pol = w.btls[tk]
	}
	if pol == nil {
		return nil, false
	}
	pol.ancestors[w.serving] = true
	for _, lost := range w.btlsLost[tk] {
		lost.ancestors[w.serving] = true // Conflicted, said where it would apply
	}
	return pol.tls, pol.tls == nil
}

// policyStatuses are the statuses of the policies some Gateway's routes
// use, by policy.
func (w *world) policyStatuses(controller string) map[Key]gwv1.PolicyStatus {
	out := map[Key]gwv1.PolicyStatus{}
	for _, p := range w.btlsAll {
		if len(p.ancestors) == 0 {
			continue
		}
		gen := p.obj.Generation
		var conds []metavCondition
		if p.accWhy == "" {
			conds = append(conds, cond("Accepted", true, "Accepted", "accepted", gen))
		} else {
			conds = append(conds, cond("Accepted", false, p.accWhy, p.msg, gen))
		}
		if p.refsWhy == "" {
			conds = append(conds, cond("ResolvedRefs", true, "ResolvedRefs", "resolved", gen))
		} else {
			conds = append(conds, cond("ResolvedRefs", false, p.refsWhy, p.msg, gen))
		}
		var st gwv1.PolicyStatus
		for _, a := range slices.SortedFunc(maps.Keys(p.ancestors), func(a, b Key) int {
			return compareKeys(a, b)
		}) {
			g, k, ns := gwv1.Group(gwv1.GroupName), gwv1.Kind("Gateway"), gwv1.Namespace(a.Namespace)
			st.Ancestors = append(st.Ancestors, gwv1.PolicyAncestorStatus{
				AncestorRef:    gwv1.ParentReference{Group: &g, Kind: &k, Namespace: &ns, Name: gwv1.ObjectName(a.Name)},
				ControllerName: gwv1.GatewayController(controller), Conditions: slices.Clone(conds),
			})
		}
		out[Key{p.obj.Namespace, p.obj.Name}] = st
	}
	return out
}

func compareKeys(a, b Key) int {
	if a.Namespace != b.Namespace {
		if a.Namespace < b.Namespace {
			return -1
		}
		return 1
	}
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}
