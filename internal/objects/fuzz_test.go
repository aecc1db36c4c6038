package objects

import (
	"errors"
	"strings"
	"testing"
)

// FuzzLoad feeds any bytes to Load: it never panics, each error is an
// *Error of one of the classes, a Service or EndpointSlice always has a
// namespace, no two objects of a kind share a namespace and name, and a
// list nested deeper than MaxDepth yields nothing from its items.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		multiDoc, kubectlList, jsonList, "", "---\n", "[[[[[[[[[[[]]]]]]]]]]]",
		"kind: Service\nmetadata: {name: a}\n---\nkind: Service\nmetadata: {name: a}\n",
		"apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: g}\n",
		`{"kind":"List","items":[{"kind":"List","items":[{"kind":"Node","metadata":{"name":"n"}}]}]}`,
		"kind: \"Svc\\nx\"\nmetadata: {name: \"a b\"}\n",
	} {
		f.Add(s)
	}
	classes := []error{ErrRead, ErrSyntax, ErrDecode, ErrVersion, ErrTooDeep, ErrKind, ErrDuplicate}
	f.Fuzz(func(t *testing.T, in string) {
		set, errs := Load(strings.NewReader(in), "in")
		for _, err := range errs {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *Error", err)
			}
			n := 0
			for _, c := range classes {
				if errors.Is(err, c) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("error %v is of %d classes", err, n)
			}
		}
		seen := map[string]bool{}
		for _, s := range set.Services {
			if s.Namespace == "" || seen["s "+s.Namespace+"/"+s.Name] {
				t.Fatalf("Service %q/%q: no namespace or a duplicate", s.Namespace, s.Name)
			}
			seen["s "+s.Namespace+"/"+s.Name] = true
		}
		for _, s := range set.EndpointSlices {
			if s.Namespace == "" || seen["e "+s.Namespace+"/"+s.Name] {
				t.Fatalf("EndpointSlice %q/%q: no namespace or a duplicate", s.Namespace, s.Name)
			}
			seen["e "+s.Namespace+"/"+s.Name] = true
		}
		for _, n := range set.Nodes {
			if seen["n "+n.Name] {
				t.Fatalf("Node %q twice", n.Name)
			}
			seen["n "+n.Name] = true
		}
	})
}
