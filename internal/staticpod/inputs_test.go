package staticpod

import (
	"errors"
	"maps"
	"testing"
)

func TestPool(t *testing.T) {
	for _, tc := range []struct {
		name, data, desc string
		ann              map[string]string
		err              bool
	}{
		{name: "NodePool YAML", data: "apiVersion: hypershift.openshift.io/v1beta1\nkind: NodePool\nmetadata:\n  name: a\n  namespace: clusters\n  annotations:\n    " + ImageAnnotation + ": x:1\nspec: {replicas: 3}\n",
			desc: "NodePool clusters/a", ann: map[string]string{ImageAnnotation: "x:1"}},
		{name: "MachineDeployment JSON", data: `{"apiVersion":"cluster.x-k8s.io/v1beta1","kind":"MachineDeployment","metadata":{"name":"md","namespace":"ns","annotations":{"` + HyperShiftImageAnnotation + `":"y:2"}}}`,
			desc: "MachineDeployment ns/md", ann: map[string]string{HyperShiftImageAnnotation: "y:2"}},
		{name: "cluster-scoped without annotations", data: "kind: Node\nmetadata: {name: n1}\n", desc: "Node n1"},
		{name: "leading document separator", data: "---\nkind: ConfigMap\nmetadata: {name: c, namespace: d}\n", desc: "ConfigMap d/c"},
		{name: "not an object", data: "a: b\n", err: true},
		{name: "garbage", data: "{{{", err: true},
		{name: "two objects", data: "kind: A\nmetadata: {name: a}\n---\nkind: B\nmetadata: {name: b}\n", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			desc, ann, err := Pool([]byte(tc.data))
			if tc.err {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("error %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil || desc != tc.desc || !maps.Equal(ann, tc.ann) {
				t.Errorf("got %q %v %v, want %q %v", desc, ann, err, tc.desc, tc.ann)
			}
		})
	}
}

func TestReleaseImages(t *testing.T) {
	m, err := ReleaseImages([]byte("haproxy-router: quay.io/a:1\nother: quay.io/b:2\n"))
	if err != nil || m["haproxy-router"] != "quay.io/a:1" || len(m) != 2 {
		t.Errorf("got %v %v", m, err)
	}
	for _, bad := range []string{"- a\n- b\n", "a: {b: c}\n", "{{"} {
		if _, err := ReleaseImages([]byte(bad)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: error %v, want ErrInvalid", bad, err)
		}
	}
}
