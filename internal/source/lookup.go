package source

import corev1 "k8s.io/api/core/v1"

// Service returns the cached Service namespace/name (shared with the
// cache: do not modify).
func (s *Source) Service(namespace, name string) (*corev1.Service, bool) {
	o, ok, err := s.current().services.GetStore().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	svc, ok := o.(*corev1.Service)
	return svc, ok
}

// Services lists the cached Services into a new slice (shared objects: do
// not modify). Unlike Snapshot it may be called from any goroutine.
func (s *Source) Services() []*corev1.Service {
	objs := s.current().services.GetStore().List()
	out := make([]*corev1.Service, 0, len(objs))
	for _, o := range objs {
		if svc, ok := o.(*corev1.Service); ok {
			out = append(out, svc)
		}
	}
	return out
}
