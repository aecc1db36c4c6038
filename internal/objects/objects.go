// Package objects loads Services, EndpointSlices and Nodes from YAML or JSON
// files, for rendering a configuration offline (without an API server).
package objects

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// Error classes; test with errors.Is.
var (
	// ErrRead: the input could not be read; loading stopped there.
	ErrRead = errors.New("cannot read input")
	// ErrSyntax: a document is not valid YAML or JSON.
	ErrSyntax = errors.New("invalid YAML or JSON")
	// ErrDecode: a document or item is not a well-formed object of its kind.
	ErrDecode = errors.New("cannot decode object")
	// ErrVersion: a known kind in an API version this package does not read.
	ErrVersion = errors.New("unsupported API version")
	// ErrTooDeep: lists nested deeper than MaxDepth; what they hold is not
	// read (each level would be decoded again, at a cost of size times
	// depth).
	ErrTooDeep = errors.New("lists nested too deep")
	// ErrKind: an object of a kind this package does not read (render's
	// output would not be what run serves were it dropped in silence).
	ErrKind = errors.New("kind not read")
	// ErrDuplicate: a second object of the same kind, namespace and name;
	// the first is kept.
	ErrDuplicate = errors.New("duplicate object")
)

// GatewayGroup is the API group of the Gateway API, whose objects run
// --mode=gateway serves and render does not read.
const GatewayGroup = "gateway.networking.k8s.io"

// MaxDepth is how deep lists (kind List, typed lists, arrays) may nest
// within a document: kubectl writes one level, a hand-made file a few.
const MaxDepth = 8

// header is the part of any object needed to route and name it.
type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// wanted reports whether kind is read by this package (or may contain such).
func wanted(kind string) bool {
	switch kind {
	case "Service", "Node", "EndpointSlice", pools.Kind:
		return true
	}
	if gatewayKind(kind) || ingressKind(kind) {
		return true
	}
	return strings.HasSuffix(kind, "List")
}

// Load reads a stream of YAML documents separated by "---", or a stream of
// JSON values, and collects the Services, EndpointSlices and Nodes in it.
// Lists (kind List, as printed by kubectl, or typed lists such as
// ServiceList) are walked recursively, and so are top-level JSON/YAML arrays.
// Lists nest at most MaxDepth deep (ErrTooDeep beyond: not read).
// Objects of other kinds are ignored. A document or item that cannot be
// decoded yields an *Error naming source, document index, item path and,
// when known, kind, namespace and name; loading continues with the rest,
// except after a read error or broken JSON stream, after which it stops.
func Load(r io.Reader, source string) (Set, []error) {
	l := &loader{source: source}
	br := bufio.NewReader(r)
	if isJSON(br) {
		l.loadJSON(br)
	} else {
		l.loadYAML(br)
	}
	return l.set, l.errs
}

type loader struct {
	source string
	set    Set
	errs   []error
}

// isJSON peeks at the first non-blank byte: '{' or '[' starts a JSON stream.
func isJSON(br *bufio.Reader) bool {
	for n := 1; ; n++ {
		b, err := br.Peek(n)
		if len(b) < n {
			return false
		}
		switch c := b[n-1]; c {
		case ' ', '\t', '\r', '\n':
			if err != nil {
				return false
			}
			continue
		case '{', '[':
			return true
		default:
			return false
		}
	}
}

func (l *loader) loadJSON(r io.Reader) {
	dec := json.NewDecoder(r)
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			return
		}
		if err != nil {
			// A JSON decoder cannot resynchronise after a syntax error.
			class := ErrSyntax
			var syn *json.SyntaxError
			if !errors.As(err, &syn) && !errors.Is(err, io.ErrUnexpectedEOF) {
				class = ErrRead
			}
			l.errs = append(l.errs, &Error{Source: l.source, Doc: doc, Class: class, Err: err})
			return
		}
		l.value(raw, doc, nil, nil)
	}
}

func (l *loader) loadYAML(br *bufio.Reader) {
	yr := utilyaml.NewYAMLReader(br)
	for doc := 1; ; doc++ {
		data, err := yr.Read()
		if err == io.EOF {
			return
		}
		if err != nil {
			var syn utilyaml.YAMLSyntaxError
			if errors.As(err, &syn) { // bad "---" line; the reader carries on
				l.errs = append(l.errs, &Error{Source: l.source, Doc: doc, Class: ErrSyntax, Err: err})
				continue
			}
			l.errs = append(l.errs, &Error{Source: l.source, Doc: doc, Class: ErrRead, Err: err})
			return
		}
		js, err := yaml.YAMLToJSON(data)
		if err != nil {
			l.errs = append(l.errs, &Error{Source: l.source, Doc: doc, Class: ErrSyntax, Err: err})
			continue
		}
		l.value(js, doc, nil, nil)
	}
}

// value handles one JSON value: an object, an array of values, or null
// (an empty document or item). inherit is the kind and version implied by an
// enclosing typed list, for items that do not state their own.
func (l *loader) value(raw json.RawMessage, doc int, path []int, inherit *header) {
	fail := func(h *header, class, err error) {
		e := &Error{Source: l.source, Doc: doc, Item: path, Class: class, Err: err}
		if h != nil {
			e.Kind, e.Namespace, e.Name = h.Kind, h.Metadata.Namespace, h.Metadata.Name
		}
		l.errs = append(l.errs, e)
	}
	trimmed := bytes.TrimSpace(raw)
	switch {
	case len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")):
		return
	case trimmed[0] == '[':
		var items []json.RawMessage
		if err := json.Unmarshal(trimmed, &items); err != nil {
			fail(nil, ErrDecode, err)
			return
		}
		l.items(items, doc, path, nil)
		return
	case trimmed[0] != '{':
		fail(nil, ErrDecode, errors.New("not an object"))
		return
	}

	var h header
	if err := json.Unmarshal(trimmed, &h); err != nil {
		// Salvage what identifies the object, for the message: a kind
		// this package reads does not decode, or another kind is there.
		var loose struct {
			Kind     json.RawMessage `json:"kind"`
			Metadata json.RawMessage `json:"metadata"`
		}
		_ = json.Unmarshal(trimmed, &loose)
		h = header{}
		_ = json.Unmarshal(loose.Kind, &h.Kind)
		_ = json.Unmarshal(loose.Metadata, &h.Metadata)
		if h.Kind == "" && inherit != nil {
			h.Kind = inherit.Kind
		}
		switch {
		case wanted(h.Kind):
			fail(&h, ErrDecode, err)
		case h.Kind != "":
			fail(&h, ErrKind, fmt.Errorf("render does not read %s objects", settings.ShowName(h.Kind)))
		}
		return
	}
	if h.Kind == "" && inherit != nil {
		h.Kind, h.APIVersion = inherit.Kind, inherit.APIVersion
	}

	if base, ok := strings.CutSuffix(h.Kind, "List"); ok {
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(trimmed, &list); err != nil {
			fail(&h, ErrDecode, err)
			return
		}
		var in *header
		if base != "" {
			in = &header{Kind: base, APIVersion: h.APIVersion}
		}
		l.items(list.Items, doc, path, in)
		return
	}

	if h.APIVersion == "" { // hand-written files: assume the usual version
		switch h.Kind {
		case "Service", "Node":
			h.APIVersion = "v1"
		case "EndpointSlice":
			h.APIVersion = discoveryv1.GroupName + "/v1"
		}
	}
	// What a namespaced object without a namespace is in: kubectl apply's
	// default, as the apiserver would make it.
	ns := h.Metadata.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	// first records the object; false for a duplicate (reported).
	first := func(kind, ns, name string) bool {
		if err := l.set.add(kind, ns, name, &Error{Source: l.source, Doc: doc, Item: path}); err != nil {
			l.errs = append(l.errs, err)
			return false
		}
		return true
	}
	d := decoding{h: &h, raw: trimmed, first: first, fail: fail}
	switch group, version := splitAPIVersion(h.APIVersion); {
	case h.Kind == "Service" && group == "":
		if version != "v1" {
			fail(&h, ErrVersion, fmt.Errorf("want v1, got %q", h.APIVersion))
			return
		}
		if o := decodeInto(d, ns, &l.set.Services); o != nil {
			o.Kind, o.APIVersion = h.Kind, "v1"
		}
	case h.Kind == "Node" && group == "":
		if version != "v1" {
			fail(&h, ErrVersion, fmt.Errorf("want v1, got %q", h.APIVersion))
			return
		}
		if o := decodeInto(d, "", &l.set.Nodes); o != nil {
			o.Kind, o.APIVersion = h.Kind, "v1"
		}
	case h.Kind == "EndpointSlice" && group == discoveryv1.GroupName:
		if version != "v1" {
			fail(&h, ErrVersion, fmt.Errorf("want %s/v1, got %q", discoveryv1.GroupName, h.APIVersion))
			return
		}
		if o := decodeInto(d, ns, &l.set.EndpointSlices); o != nil {
			o.Kind, o.APIVersion = h.Kind, discoveryv1.GroupName+"/v1"
		}
	case h.Kind == pools.Kind && group == pools.GVR.Group:
		if version != pools.GVR.Version {
			fail(&h, ErrVersion, fmt.Errorf("want %s/%s, got %q", pools.GVR.Group, pools.GVR.Version, h.APIVersion))
			return
		}
		decodeInto(d, "", &l.set.AddressPools)
	case group == GatewayGroup && l.gateway(d, ns, version):
	case l.ingress(d, ns, group, version):
	case group == GatewayGroup:
		fail(&h, ErrKind, errors.New("render reads GatewayClasses, Gateways, HTTPRoutes, GRPCRoutes and ReferenceGrants of the Gateway API only (run --mode=gateway serves the others)"))
	default:
		fail(&h, ErrKind, fmt.Errorf("render reads Services, EndpointSlices, Nodes and AddressPools only, not %s of %s",
			settings.ShowName(h.Kind), settings.ShowName(h.APIVersion)))
	}
}

func (l *loader) items(items []json.RawMessage, doc int, path []int, inherit *header) {
	if len(path) >= MaxDepth && len(items) > 0 {
		l.errs = append(l.errs, &Error{Source: l.source, Doc: doc, Item: path, Class: ErrTooDeep,
			Err: fmt.Errorf("a list within %d levels of lists; its %d item(s) are not read", MaxDepth, len(items))})
		return
	}
	for i, item := range items {
		l.value(item, doc, append(path[:len(path):len(path)], i), inherit)
	}
}

// splitAPIVersion splits "group/version"; a bare version is the core group.
func splitAPIVersion(av string) (group, version string) {
	if i := strings.LastIndexByte(av, '/'); i >= 0 {
		return av[:i], av[i+1:]
	}
	return "", av
}
