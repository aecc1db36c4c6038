package objects

import (
	"errors"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// Set holds the loaded objects, in input order.
type Set struct {
	Services       []*corev1.Service
	EndpointSlices []*discoveryv1.EndpointSlice
	Nodes          []*corev1.Node
	AddressPools   []*pools.AddressPool
	GatewaySet     // Gateway API objects (gateway.go)
	IngressSet     // IngressClasses, Ingresses, Secrets, ConfigMaps (ingress.go)

	// where each object was read ("Kind namespace/name": "source:
	// document N, item I"), to name both places of a duplicate.
	where map[string]*Error
}

// Merge appends the objects of o to s, but for those s already holds (same
// kind, namespace and name): each of these is an *Error of class
// ErrDuplicate naming both places.
func (s *Set) Merge(o Set) []error {
	var errs []error
	keep := func(kind, ns, name string) bool {
		at := o.where[ref(kind, ns, name)]
		if err := s.add(kind, ns, name, at); err != nil {
			errs = append(errs, err)
			return false
		}
		return true
	}
	mergeInto(&s.Services, o.Services, "Service", true, keep)
	mergeInto(&s.EndpointSlices, o.EndpointSlices, "EndpointSlice", true, keep)
	mergeInto(&s.Nodes, o.Nodes, "Node", false, keep)
	mergeInto(&s.AddressPools, o.AddressPools, pools.Kind, false, keep)
	s.mergeGateway(o, keep)
	s.mergeIngress(o, keep)
	return errs
}

// named is an object of the API: a namespace ("" for a kind of the
// cluster) and a name.
type named interface {
	GetNamespace() string
	GetName() string
}

// mergeInto appends to dst the objects of src that keep lets in (Merge):
// by kind, namespace (none for a kind of the cluster: namespaced false)
// and name.
func mergeInto[T named](dst *[]T, src []T, kind string, namespaced bool, keep func(kind, ns, name string) bool) {
	for _, x := range src {
		ns := ""
		if namespaced {
			ns = x.GetNamespace()
		}
		if keep(kind, ns, x.GetName()) {
			*dst = append(*dst, x)
		}
	}
}

func ref(kind, ns, name string) string { return kind + " " + ns + "/" + name }

// add records that an object was read at at (nil: not known); it returns
// an ErrDuplicate when s has one of the same kind, namespace and name.
func (s *Set) add(kind, ns, name string, at *Error) error {
	if at == nil {
		at = &Error{Source: "?"}
	}
	k := ref(kind, ns, name)
	if first, ok := s.where[k]; ok {
		e := *at
		e.Kind, e.Namespace, e.Name, e.Class = kind, ns, name, ErrDuplicate
		e.Err = errors.New("the same object as " + first.place() + "; the first is kept")
		return &e
	}
	if s.where == nil {
		s.where = make(map[string]*Error)
	}
	s.where[k] = at
	return nil
}

// Error locates a document or item that could not be loaded.
type Error struct {
	Source          string // as given to Load
	Doc             int    // 1-based document index in the stream
	Item            []int  // 0-based indexes into nested lists' items, outermost first
	Kind            string // when known
	Namespace, Name string
	Class           error // ErrRead, ErrSyntax, ErrDecode, ErrVersion or ErrTooDeep
	Err             error // the underlying cause, may be nil
}

// place is where e is: "source: document N, item I".
func (e *Error) place() string {
	var b strings.Builder
	b.WriteString(e.Source)
	if e.Doc > 0 {
		b.WriteString(": document " + strconv.Itoa(e.Doc))
	}
	for _, i := range e.Item {
		b.WriteString(", item " + strconv.Itoa(i))
	}
	return b.String()
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.place())
	if e.Kind != "" || e.Name != "" {
		b.WriteString(" (")
		if e.Kind != "" {
			b.WriteString(settings.ShowName(e.Kind))
		}
		if e.Name != "" {
			if e.Kind != "" {
				b.WriteByte(' ')
			}
			name := e.Name
			if e.Namespace != "" {
				name = e.Namespace + "/" + name
			}
			b.WriteString(settings.ShowName(name))
		}
		b.WriteByte(')')
	}
	b.WriteString(": " + e.Class.Error())
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap exposes both the class and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Class}
	}
	return []error{e.Class, e.Err}
}
