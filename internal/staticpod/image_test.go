package staticpod

import (
	"errors"
	"strings"
	"testing"
)

const digestRef = "quay.io/org/haproxy@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestResolveImage(t *testing.T) {
	pool := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	release := map[string]string{"haproxy-router": "quay.io/release/haproxy-router:4.18", "other": "quay.io/release/other:1"}
	const np = "NodePool clusters/workers"
	tests := []struct {
		name       string
		in         ImageInputs
		want       string
		wantSource string
		wantErr    error
		errHas     []string
	}{
		{
			name:       "our annotation wins over everything",
			in:         ImageInputs{Pool: np, PoolAnnotations: pool(ImageAnnotation, "quay.io/a/haproxy:1", HyperShiftImageAnnotation, "quay.io/b/haproxy:2"), SharedIngress: true, Env: "quay.io/env/haproxy:3", Default: DefaultSharedIngressImage, Release: release},
			want:       "quay.io/a/haproxy:1",
			wantSource: "annotation haproxy-k8s-sync.io/haproxy-image on " + np,
		},
		{
			name:       "hypershift annotation second",
			in:         ImageInputs{Pool: np, PoolAnnotations: pool(HyperShiftImageAnnotation, "quay.io/b/haproxy:2"), SharedIngress: true, Env: "quay.io/env/haproxy:3", Default: DefaultSharedIngressImage},
			want:       "quay.io/b/haproxy:2",
			wantSource: "annotation hypershift.openshift.io/haproxy-image on " + np,
		},
		{
			name:       "blank annotations fall through to the environment with shared ingress",
			in:         ImageInputs{Pool: np, PoolAnnotations: pool(ImageAnnotation, "", HyperShiftImageAnnotation, " \t\n"), SharedIngress: true, Env: "quay.io/env/haproxy:3", Default: DefaultSharedIngressImage, Release: release},
			want:       "quay.io/env/haproxy:3",
			wantSource: "environment variable IMAGE_SHARED_INGRESS_HAPROXY",
		},
		{
			name:       "blank environment falls through to the built-in default",
			in:         ImageInputs{SharedIngress: true, Env: "   ", Default: DefaultSharedIngressImage, Release: release},
			want:       DefaultSharedIngressImage,
			wantSource: "built-in default",
		},
		{
			name:       "without shared ingress the release payload, environment ignored",
			in:         ImageInputs{Pool: np, PoolAnnotations: pool("other", "x"), Env: "quay.io/env/haproxy:3", Default: DefaultSharedIngressImage, Release: release},
			want:       "quay.io/release/haproxy-router:4.18",
			wantSource: "release payload component haproxy-router",
		},
		{
			name:       "release component chosen by flag",
			in:         ImageInputs{Release: release, ReleaseComponent: "other"},
			want:       "quay.io/release/other:1",
			wantSource: "release payload component other",
		},
		{
			name:       "with shared ingress the release payload is ignored",
			in:         ImageInputs{SharedIngress: true, Default: DefaultSharedIngressImage, Release: release},
			want:       DefaultSharedIngressImage,
			wantSource: "built-in default",
		},
		{
			name:       "values are trimmed; a digest is a valid reference",
			in:         ImageInputs{Pool: np, PoolAnnotations: pool(ImageAnnotation, "  "+digestRef+"\n")},
			want:       digestRef,
			wantSource: "annotation haproxy-k8s-sync.io/haproxy-image on " + np,
		},
		{
			name:       "docker.io/library form with tag",
			in:         ImageInputs{Release: map[string]string{"haproxy-router": "docker.io/library/haproxy:2.9-alpine"}},
			want:       "docker.io/library/haproxy:2.9-alpine",
			wantSource: "release payload component haproxy-router",
		},
		{
			name:    "invalid annotation is an error naming it, no fall through",
			in:      ImageInputs{Pool: np, PoolAnnotations: pool(ImageAnnotation, "Quay.io/UPPER/haproxy:1"), SharedIngress: true, Default: DefaultSharedIngressImage},
			wantErr: ErrInvalidImage,
			errHas:  []string{"annotation haproxy-k8s-sync.io/haproxy-image on " + np, "Quay.io/UPPER/haproxy:1"},
		},
		{
			name:    "invalid environment value",
			in:      ImageInputs{SharedIngress: true, Env: "haproxy:1 --privileged", Default: DefaultSharedIngressImage},
			wantErr: ErrInvalidImage,
			errHas:  []string{"environment variable IMAGE_SHARED_INGRESS_HAPROXY"},
		},
		{
			name:    "invalid release image",
			in:      ImageInputs{Release: map[string]string{"haproxy-router": "quay.io/x/haproxy@sha256:short"}},
			wantErr: ErrInvalidImage,
			errHas:  []string{"release payload component haproxy-router"},
		},
		{
			name:    "invalid tag",
			in:      ImageInputs{Pool: np, PoolAnnotations: pool(HyperShiftImageAnnotation, "haproxy:-bad")},
			wantErr: ErrInvalidImage,
			errHas:  []string{"hypershift.openshift.io/haproxy-image"},
		},
		{
			name:    "nothing found without shared ingress lists every level",
			in:      ImageInputs{Pool: np, PoolAnnotations: pool(HyperShiftImageAnnotation, " "), Env: "quay.io/env/haproxy:3", Default: DefaultSharedIngressImage, Release: map[string]string{"other": "quay.io/x:1"}},
			wantErr: ErrNoImage,
			errHas: []string{
				"annotation haproxy-k8s-sync.io/haproxy-image on " + np + " (not set)",
				"annotation hypershift.openshift.io/haproxy-image on " + np + " (empty)",
				"release payload component haproxy-router (not set)",
				"only with --shared-ingress",
			},
		},
		{
			name:    "nothing given at all",
			in:      ImageInputs{},
			wantErr: ErrNoImage,
			errHas:  []string{"no --pool", "no --release-images"},
		},
		{
			name:    "shared ingress with no default either",
			in:      ImageInputs{SharedIngress: true, Env: " "},
			wantErr: ErrNoImage,
			errHas:  []string{"IMAGE_SHARED_INGRESS_HAPROXY (empty)", "built-in default (none)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveImage(tt.in)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				for _, s := range tt.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Ref != tt.want || got.Source != tt.wantSource {
				t.Errorf("got %q from %q, want %q from %q", got.Ref, got.Source, tt.want, tt.wantSource)
			}
		})
	}
}
