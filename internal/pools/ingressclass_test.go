package pools

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// TestIngressClassRequestFamilies: the class asks for one address of
// each family its ip-families annotation lists (IPv4 without it), keeps
// the current addresses of those families only, and a value it cannot
// read is an error (settings.ErrInvalid) and no request.
func TestIngressClassRequestFamilies(t *testing.T) {
	v4, v6 := netip.MustParseAddr("198.18.0.7"), netip.MustParseAddr("2001:db8::7")
	current := []netip.Addr{v4, v6}
	for _, tc := range []struct {
		name     string
		families *string // nil: no annotation
		want     []int
		current  []netip.Addr
		err      bool
	}{
		{name: "none", want: []int{4}, current: []netip.Addr{v4}},
		{name: "IPv6", families: ptr("IPv6"), want: []int{6}, current: []netip.Addr{v6}},
		{name: "both", families: ptr("IPv6, IPv4"), want: []int{6, 4}, current: []netip.Addr{v4, v6}},
		{name: "empty", families: ptr(""), err: true},
		{name: "unknown", families: ptr("IPv5"), err: true},
		{name: "lower case", families: ptr("ipv6"), err: true},
		{name: "twice", families: ptr("IPv4,IPv4"), err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ic := &netv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "hks", Annotations: map[string]string{PoolAnnotation: "p"}}}
			if tc.families != nil {
				ic.Annotations[IngressClassFamiliesAnnotation] = *tc.families
			}
			r, ok, err := IngressClassRequest(ic, []uint16{80}, current)
			if (err != nil) != tc.err || ok == tc.err {
				t.Fatalf("ok %v, err %v; want an error: %v", ok, err, tc.err)
			}
			if err != nil && !errors.Is(err, settings.ErrInvalid) {
				t.Errorf("error %v: not settings.ErrInvalid", err)
			}
			if !slices.Equal(r.Families, tc.want) || !slices.Equal(r.Current, tc.current) {
				t.Errorf("families %v, current %v; want %v, %v", r.Families, r.Current, tc.want, tc.current)
			}
		})
	}
}

func ptr(s string) *string { return &s }
