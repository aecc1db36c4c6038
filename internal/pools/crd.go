package pools

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GVR is the resource of the AddressPool custom resource (cluster-scoped),
// defined by the CRD in charts/haproxy-k8s-sync/crds and deploy/crds.
var GVR = schema.GroupVersionResource{Group: "haproxy-k8s-sync.io", Version: "v1alpha1", Resource: "addresspools"}

// Kind is the AddressPool's kind.
const Kind = "AddressPool"

// AddressPool is the custom resource, as this controller reads it: a
// small typed struct converted from the informer's unstructured objects.
type AddressPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AddressPoolSpec   `json:"spec"`
	Status            AddressPoolStatus `json:"status,omitempty"`
}

// AddressPoolSpec is what the operator writes.
type AddressPoolSpec struct {
	// Addresses: CIDRs ("198.18.0.0/24") or ranges ("198.18.0.10-198.18.0.20"), IPv4 or IPv6.
	Addresses []string `json:"addresses"`
	// AutoAssign (default true): Services that ask for no address or pool
	// get one from here.
	AutoAssign        *bool              `json:"autoAssign,omitempty"`
	ServiceAllocation *ServiceAllocation `json:"serviceAllocation,omitempty"`
}

// ServiceAllocation restricts which Services the pool serves, and orders
// the pools that match one.
type ServiceAllocation struct {
	Priority          int                   `json:"priority,omitempty"`
	Namespaces        []string              `json:"namespaces,omitempty"`
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	ServiceSelector   *metav1.LabelSelector `json:"serviceSelector,omitempty"`
}

// AddressPoolStatus is what the controller reports.
type AddressPoolStatus struct {
	Assigned int64 `json:"assigned"`
	Free     int64 `json:"free"`
	// Error says why the spec could not be used (the pool then serves
	// nothing new; addresses already assigned from it stay).
	Error string `json:"error,omitempty"`
	// Announced is how many of the pool's addresses are announced now,
	// as the leader's announcer knows (nil without --announce, or with
	// an announcer that does not say: keepalived).
	Announced *int64 `json:"announced,omitempty"`
	// AnnouncedBy names who announces each of them, the first
	// MaxAnnouncedBy by address.
	AnnouncedBy []AddressHolders `json:"announcedBy,omitempty"`
}

// MaxAnnouncedBy bounds AddressPoolStatus.AnnouncedBy (the CRD's
// maxItems): a pool's status stays small however many addresses it
// serves; Announced counts them all.
const MaxAnnouncedBy = 64

// MaxHostsPerAddress bounds AddressHolders.Hosts (the CRD's maxItems):
// one owner with layer 2, two for the moment a partition heals.
const MaxHostsPerAddress = 16

// AddressHolders is who announces one address.
type AddressHolders struct {
	Address string   `json:"address"`
	Hosts   []string `json:"hosts"`
}

// Equal reports whether two statuses say the same.
func (s AddressPoolStatus) Equal(o AddressPoolStatus) bool {
	return s.Assigned == o.Assigned && s.Free == o.Free && s.Error == o.Error &&
		(s.Announced == nil) == (o.Announced == nil) && (s.Announced == nil || *s.Announced == *o.Announced) &&
		slices.EqualFunc(s.AnnouncedBy, o.AnnouncedBy, func(x, y AddressHolders) bool {
			return x.Address == y.Address && slices.Equal(x.Hosts, y.Hosts)
		})
}

// FromUnstructured converts an informer object.
func FromUnstructured(u *unstructured.Unstructured) (*AddressPool, error) {
	var ap AddressPool
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ap); err != nil {
		return nil, fmt.Errorf("AddressPool %s: %w", u.GetName(), err)
	}
	return &ap, nil
}

// selector adapts a labels.Selector.
type selector struct{ s labels.Selector }

func (s selector) Matches(m map[string]string) bool { return s.s.Matches(labels.Set(m)) }

// Pool parses the spec. The apiserver validates it with the CRD's schema
// first; this is the second line (objects written before a schema
// change, or the schema's gaps), and anything it rejects makes the pool
// unusable, never half-read.
func (ap *AddressPool) Pool() (Pool, error) {
	p := Pool{Name: ap.Name, AutoAssign: ap.Spec.AutoAssign == nil || *ap.Spec.AutoAssign}
	var errs []error
	if len(ap.Spec.Addresses) == 0 {
		errs = append(errs, errors.New("spec.addresses is empty"))
	}
	for _, s := range ap.Spec.Addresses {
		r, err := ParseRange(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.Ranges = append(p.Ranges, r)
	}
	if sa := ap.Spec.ServiceAllocation; sa != nil {
		p.Priority, p.Namespaces = sa.Priority, sa.Namespaces
		for _, x := range []struct {
			ls  *metav1.LabelSelector
			dst *Selector
			at  string
		}{{sa.NamespaceSelector, &p.NamespaceSelector, "namespaceSelector"}, {sa.ServiceSelector, &p.ServiceSelector, "serviceSelector"}} {
			if x.ls == nil {
				continue
			}
			s, err := metav1.LabelSelectorAsSelector(x.ls)
			if err != nil {
				errs = append(errs, fmt.Errorf("serviceAllocation.%s: %w", x.at, err))
				continue
			}
			*x.dst = selector{s}
		}
	}
	if len(errs) > 0 {
		msg := make([]string, len(errs))
		for i, e := range errs {
			msg[i] = e.Error()
		}
		return Pool{}, errors.New(strings.Join(msg, "; "))
	}
	return p, nil
}
