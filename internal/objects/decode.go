package objects

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// decoding is one object on its way into a Set: its header, its bytes,
// and the loader's duplicate check and failure report.
type decoding struct {
	h     *header
	raw   []byte
	first func(kind, ns, name string) bool
	fail  func(*header, error, error)
}

// decodeInto decodes d's object as a T, puts it in namespace ns (""
// for a cluster-scoped kind) and appends it to list unless the loader saw
// its kind and name before; it returns the object appended, or nil.
func decodeInto[T any, P interface {
	*T
	metav1.Object
}](d decoding, ns string, list *[]P) P {
	o := P(new(T))
	if err := json.Unmarshal(d.raw, o); err != nil {
		d.fail(d.h, ErrDecode, err)
		return nil
	}
	if ns != "" {
		o.SetNamespace(ns)
	}
	if !d.first(d.h.Kind, ns, o.GetName()) {
		return nil
	}
	*list = append(*list, o)
	return o
}
