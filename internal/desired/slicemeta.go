package desired

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// SliceMeta is what a Slice keeps of its EndpointSlice's metadata: the
// informer's keys and change detection need no more. A whole
// metav1.ObjectMeta is 232 bytes, this 64, in each of tens of thousands
// of cached slices (issue 29). It makes a Slice a metav1.Object, as
// client-go's stores read their objects (meta.Accessor, the key
// functions): they only read it (a transform runs once, on the
// EndpointSlice; Slim makes the Slice). The four fields it keeps are set
// as asked. The fields it does not keep read as zero, and their setters
// take only that zero (nil or empty, a zero time), as a generic cleanup
// of a cache's objects asks (SetManagedFields(nil), say): the object then
// is as asked. Given anything else they panic: the value would be lost,
// and a caller that sets it means to read it back.
type SliceMeta struct {
	Name, Namespace string
	UID             types.UID
	ResourceVersion string
}

var _ metav1.Object = (*SliceMeta)(nil)

func (m *SliceMeta) GetNamespace() string        { return m.Namespace }
func (m *SliceMeta) SetNamespace(ns string)      { m.Namespace = ns }
func (m *SliceMeta) GetName() string             { return m.Name }
func (m *SliceMeta) SetName(name string)         { m.Name = name }
func (m *SliceMeta) GetUID() types.UID           { return m.UID }
func (m *SliceMeta) SetUID(uid types.UID)        { m.UID = uid }
func (m *SliceMeta) GetResourceVersion() string  { return m.ResourceVersion }
func (m *SliceMeta) SetResourceVersion(v string) { m.ResourceVersion = v }
func (m *SliceMeta) GetGenerateName() string     { return "" }
func (m *SliceMeta) SetGenerateName(v string)    { notKept("generateName", v == "") }
func (m *SliceMeta) GetGeneration() int64        { return 0 }
func (m *SliceMeta) SetGeneration(v int64)       { notKept("generation", v == 0) }
func (m *SliceMeta) GetSelfLink() string         { return "" }
func (m *SliceMeta) SetSelfLink(v string)        { notKept("selfLink", v == "") }
func (m *SliceMeta) GetCreationTimestamp() metav1.Time {
	return metav1.Time{}
}
func (m *SliceMeta) SetCreationTimestamp(v metav1.Time) {
	notKept("creationTimestamp", v.IsZero())
}
func (m *SliceMeta) GetDeletionTimestamp() *metav1.Time { return nil }
func (m *SliceMeta) SetDeletionTimestamp(v *metav1.Time) {
	notKept("deletionTimestamp", v == nil)
}
func (m *SliceMeta) GetDeletionGracePeriodSeconds() *int64 { return nil }
func (m *SliceMeta) SetDeletionGracePeriodSeconds(v *int64) {
	notKept("deletionGracePeriodSeconds", v == nil)
}
func (m *SliceMeta) GetLabels() map[string]string       { return nil }
func (m *SliceMeta) SetLabels(v map[string]string)      { notKept("labels", len(v) == 0) }
func (m *SliceMeta) GetAnnotations() map[string]string  { return nil }
func (m *SliceMeta) SetAnnotations(v map[string]string) { notKept("annotations", len(v) == 0) }
func (m *SliceMeta) GetFinalizers() []string            { return nil }
func (m *SliceMeta) SetFinalizers(v []string)           { notKept("finalizers", len(v) == 0) }
func (m *SliceMeta) GetOwnerReferences() []metav1.OwnerReference {
	return nil
}
func (m *SliceMeta) SetOwnerReferences(v []metav1.OwnerReference) {
	notKept("ownerReferences", len(v) == 0)
}
func (m *SliceMeta) GetManagedFields() []metav1.ManagedFieldsEntry {
	return nil
}
func (m *SliceMeta) SetManagedFields(v []metav1.ManagedFieldsEntry) {
	notKept("managedFields", len(v) == 0)
}

// notKept panics unless a field SliceMeta does not keep is set to its
// zero, which it reads as.
func notKept(field string, zero bool) {
	if !zero {
		panic("desired.SliceMeta keeps no " + field + ": only its zero value may be set (slicemeta.go)")
	}
}
