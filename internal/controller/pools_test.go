package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The allocation is reused while the same objects come back, in any
// order, and recomputed when one is replaced or goes.
func TestAllocInputs(t *testing.T) {
	a, b, c := &corev1.Service{}, &corev1.Service{}, &corev1.Service{}
	p := &unstructured.Unstructured{}
	var in allocInputs
	if in.same(nil, nil, nil) {
		t.Error("nothing computed yet, yet the same")
	}
	in.set([]*corev1.Service{a, b}, []*unstructured.Unstructured{p}, nil)
	for _, tc := range []struct {
		svcs []*corev1.Service
		pls  []*unstructured.Unstructured
		same bool
	}{
		{[]*corev1.Service{b, a}, []*unstructured.Unstructured{p}, true},
		{[]*corev1.Service{a, c}, []*unstructured.Unstructured{p}, false},
		{[]*corev1.Service{a}, []*unstructured.Unstructured{p}, false},
		{[]*corev1.Service{a, b}, nil, false},
	} {
		if got := in.same(tc.svcs, tc.pls, nil); got != tc.same {
			t.Errorf("same(%d services, %d pools) = %v", len(tc.svcs), len(tc.pls), got)
		}
	}
}
