package desired

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// SliceMeta is what a Slice keeps of its EndpointSlice's metadata: the
// informer's keys and change detection need no more. A whole
// metav1.ObjectMeta is 232 bytes, this 64, in each of tens of thousands
// of cached slices (issue 29). It makes a Slice a metav1.Object, as
// client-go's stores read their objects (meta.Accessor): the fields it
// does not keep read as zero, and setting them does nothing.
type SliceMeta struct {
	Name, Namespace string
	UID             types.UID
	ResourceVersion string
}

var _ metav1.Object = (*SliceMeta)(nil)

func (m *SliceMeta) GetNamespace() string                          { return m.Namespace }
func (m *SliceMeta) SetNamespace(ns string)                        { m.Namespace = ns }
func (m *SliceMeta) GetName() string                               { return m.Name }
func (m *SliceMeta) SetName(name string)                           { m.Name = name }
func (m *SliceMeta) GetUID() types.UID                             { return m.UID }
func (m *SliceMeta) SetUID(uid types.UID)                          { m.UID = uid }
func (m *SliceMeta) GetResourceVersion() string                    { return m.ResourceVersion }
func (m *SliceMeta) SetResourceVersion(v string)                   { m.ResourceVersion = v }
func (m *SliceMeta) GetGenerateName() string                       { return "" }
func (m *SliceMeta) SetGenerateName(string)                        {}
func (m *SliceMeta) GetGeneration() int64                          { return 0 }
func (m *SliceMeta) SetGeneration(int64)                           {}
func (m *SliceMeta) GetSelfLink() string                           { return "" }
func (m *SliceMeta) SetSelfLink(string)                            {}
func (m *SliceMeta) GetCreationTimestamp() metav1.Time             { return metav1.Time{} }
func (m *SliceMeta) SetCreationTimestamp(metav1.Time)              {}
func (m *SliceMeta) GetDeletionTimestamp() *metav1.Time            { return nil }
func (m *SliceMeta) SetDeletionTimestamp(*metav1.Time)             {}
func (m *SliceMeta) GetDeletionGracePeriodSeconds() *int64         { return nil }
func (m *SliceMeta) SetDeletionGracePeriodSeconds(*int64)          {}
func (m *SliceMeta) GetLabels() map[string]string                  { return nil }
func (m *SliceMeta) SetLabels(map[string]string)                   {}
func (m *SliceMeta) GetAnnotations() map[string]string             { return nil }
func (m *SliceMeta) SetAnnotations(map[string]string)              {}
func (m *SliceMeta) GetFinalizers() []string                       { return nil }
func (m *SliceMeta) SetFinalizers([]string)                        {}
func (m *SliceMeta) GetOwnerReferences() []metav1.OwnerReference   { return nil }
func (m *SliceMeta) SetOwnerReferences([]metav1.OwnerReference)    {}
func (m *SliceMeta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (m *SliceMeta) SetManagedFields([]metav1.ManagedFieldsEntry)  {}
