// Package staticpod builds the node-local kube-apiserver proxy: a static
// pod manifest (a typed corev1.Pod) and the haproxy.cfg it runs, and
// chooses the pod's HAProxy image by a fixed precedence. Everything here
// but Discover (which reads the cluster through a client) is pure: the
// command line (internal/cli) reads files and the environment and writes
// the results.
package staticpod

import (
	"errors"
	"fmt"
	"strings"

	"github.com/distribution/reference"
)

// Annotations read on the node-pool object, highest priority first.
const (
	ImageAnnotation           = "haproxy-k8s-sync.io/haproxy-image"
	HyperShiftImageAnnotation = "hypershift.openshift.io/haproxy-image"
)

// SharedIngressEnv overrides the image of every pool without an annotation,
// with shared ingress only.
const SharedIngressEnv = "IMAGE_SHARED_INGRESS_HAPROXY"

// DefaultSharedIngressImage is the built-in image with shared ingress. PROXY
// protocol v2 with TLVs, which shared ingress relies on, needs HAProxy 2.9
// or later.
const DefaultSharedIngressImage = "docker.io/library/haproxy:3.0"

// DefaultReleaseComponent is the component of the release payload whose
// image is used without shared ingress.
const DefaultReleaseComponent = "haproxy-router"

// ErrNoImage: no level of the precedence gave an image.
var ErrNoImage = errors.New("no HAProxy image")

// ErrInvalidImage: the level that won holds something that is not an image
// reference.
var ErrInvalidImage = errors.New("invalid image reference")

// ImageInputs is everything the image choice looks at. The caller reads
// files and the environment; ResolveImage only decides.
type ImageInputs struct {
	// Pool is the node-pool object given with --pool ("" when none), as
	// "Kind namespace/name", for messages; PoolAnnotations its annotations.
	Pool            string
	PoolAnnotations map[string]string

	SharedIngress bool
	Env           string // value of IMAGE_SHARED_INGRESS_HAPROXY
	Default       string // built-in image with shared ingress

	// Release maps a release payload's components to their images; nil
	// when no --release-images was given. ReleaseComponent is the one to
	// use ("" means DefaultReleaseComponent).
	Release          map[string]string
	ReleaseComponent string
}

// Image is the chosen image and the level it came from.
type Image struct {
	Ref    string
	Source string // e.g. "annotation haproxy-k8s-sync.io/haproxy-image on NodePool clusters/a"
}

// ResolveImage applies the precedence, highest first:
//
//  1. annotation haproxy-k8s-sync.io/haproxy-image on the pool object,
//  2. annotation hypershift.openshift.io/haproxy-image on the pool object,
//  3. with shared ingress: the environment variable, then the built-in
//     default; without: the release payload's component.
//
// A level that is absent, empty or only whitespace falls through to the
// next. The first level with a value decides: if that value is not a valid
// image reference the result is an error wrapping ErrInvalidImage that
// names the level (lower levels are not consulted). With no value at any
// level the error wraps ErrNoImage and lists what was looked at.
func ResolveImage(in ImageInputs) (Image, error) {
	type level struct{ source, value, why string }
	var levels []level
	for _, key := range []string{ImageAnnotation, HyperShiftImageAnnotation} {
		src := "annotation " + key
		if in.Pool == "" {
			levels = append(levels, level{source: src, why: "no --pool"})
			continue
		}
		src += " on " + in.Pool
		v, ok := in.PoolAnnotations[key]
		levels = append(levels, level{source: src, value: v, why: absent(ok)})
	}
	if in.SharedIngress {
		levels = append(levels,
			level{source: "environment variable " + SharedIngressEnv, value: in.Env, why: absent(in.Env != "")},
			level{source: "built-in default", value: in.Default, why: "none"})
	} else {
		comp := in.ReleaseComponent
		if comp == "" {
			comp = DefaultReleaseComponent
		}
		src := "release payload component " + comp
		if in.Release == nil {
			levels = append(levels, level{source: src, why: "no --release-images"})
		} else {
			v, ok := in.Release[comp]
			levels = append(levels, level{source: src, value: v, why: absent(ok)})
		}
	}
	var looked []string
	for _, l := range levels {
		v := strings.TrimSpace(l.value)
		if v == "" {
			looked = append(looked, l.source+" ("+l.why+")")
			continue
		}
		if err := ValidateImage(v); err != nil {
			return Image{}, fmt.Errorf("%s: %w", l.source, err)
		}
		return Image{Ref: v, Source: l.source}, nil
	}
	if !in.SharedIngress {
		looked = append(looked, "environment variable "+SharedIngressEnv+" and the built-in default (only with --shared-ingress)")
	}
	return Image{}, fmt.Errorf("%w: looked at %s", ErrNoImage, strings.Join(looked, "; "))
}

func absent(present bool) string {
	if present {
		return "empty"
	}
	return "not set"
}

// ValidateImage returns an error wrapping ErrInvalidImage unless ref is an
// image reference a container runtime accepts: a name with an optional
// registry, tag and digest (docker.io/library/haproxy:3.0,
// haproxy@sha256:...).
func ValidateImage(ref string) error {
	if _, err := reference.ParseNormalizedNamed(ref); err != nil {
		return fmt.Errorf("%w %q: %v", ErrInvalidImage, ref, err)
	}
	return nil
}
