package staticpod

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Pool reads the node-pool object of --pool: any single Kubernetes object
// in YAML or JSON (a NodePool, a MachineDeployment, a ConfigMap). It
// returns "Kind namespace/name" for messages, and the annotations.
func Pool(data []byte) (string, map[string]string, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var obj metav1.PartialObjectMetadata
	if err := dec.Decode(&obj); err != nil {
		return "", nil, fmt.Errorf("%w: not a Kubernetes object: %v", ErrInvalid, err)
	}
	var extra map[string]any
	if err := dec.Decode(&extra); err == nil && len(extra) > 0 {
		return "", nil, fmt.Errorf("%w: more than one object: give the one node pool", ErrInvalid)
	} else if err != nil && !errors.Is(err, io.EOF) {
		return "", nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if obj.Kind == "" || obj.Name == "" {
		return "", nil, fmt.Errorf("%w: not a Kubernetes object: no kind or metadata.name", ErrInvalid)
	}
	desc := obj.Kind + " " + obj.Name
	if obj.Namespace != "" {
		desc = obj.Kind + " " + obj.Namespace + "/" + obj.Name
	}
	return desc, obj.Annotations, nil
}

// ReleaseImages reads --release-images: a YAML (or JSON) map of component
// name to image reference. The references are checked when chosen.
func ReleaseImages(data []byte) (map[string]string, error) {
	m := map[string]string{}
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return nil, fmt.Errorf("%w: want a map of component name to image: %v", ErrInvalid, err)
	}
	return m, nil
}
