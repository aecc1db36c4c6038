package leader

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// Recorder passes Events on only while the gate is open: the leader
// reports, the other replicas stay quiet. (The controller asks the gate
// itself, controller.Options.Leading, to keep a problem unreported until
// this replica leads.)
type Recorder struct {
	record.EventRecorder
	Gate *Gate
}

func (r Recorder) Event(obj runtime.Object, eventtype, reason, message string) {
	if r.Gate.Leading() {
		r.EventRecorder.Event(obj, eventtype, reason, message)
	}
}

func (r Recorder) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	if r.Gate.Leading() {
		r.EventRecorder.Eventf(obj, eventtype, reason, messageFmt, args...)
	}
}

func (r Recorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	if r.Gate.Leading() {
		r.EventRecorder.AnnotatedEventf(obj, annotations, eventtype, reason, messageFmt, args...)
	}
}
