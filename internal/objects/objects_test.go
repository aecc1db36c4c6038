package objects

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// names summarises a Set as "Kind namespace/name" in load order per kind.
func names(s Set) []string {
	var out []string
	for _, o := range s.Services {
		out = append(out, o.Kind+" "+o.Namespace+"/"+o.Name)
	}
	for _, o := range s.EndpointSlices {
		out = append(out, o.Kind+" "+o.Namespace+"/"+o.Name)
	}
	for _, o := range s.Nodes {
		out = append(out, o.Kind+" "+o.Name)
	}
	for _, o := range s.Gateways {
		out = append(out, "Gateway "+o.Namespace+"/"+o.Name)
	}
	for _, o := range s.HTTPRoutes {
		out = append(out, "HTTPRoute "+o.Namespace+"/"+o.Name)
	}
	return out
}

const multiDoc = `---
# leading separator and comments
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: default
  annotations:
    haproxy-k8s-sync.io/enabled: "true"
spec:
  type: NodePort
  ports:
  - port: 80
    nodePort: 30080
    targetPort: 8080
---
---
# only a comment
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-abc
  namespace: default
  labels:
    kubernetes.io/service-name: web
addressType: IPv4
endpoints:
- addresses: ["10.0.0.1"]
  conditions: {ready: true, serving: true, terminating: false}
ports:
- port: 8080
---
apiVersion: v1
kind: Pod
metadata: {name: ignored}
data: {a: b}
---
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: knative-ignored}
---
apiVersion: v1
kind: Node
metadata: {name: node-1}
status:
  addresses:
  - {type: InternalIP, address: 192.168.1.10}
`

const kubectlList = `apiVersion: v1
kind: List
metadata:
  resourceVersion: ""
items:
- apiVersion: v1
  kind: Service
  metadata: {name: a, namespace: ns1}
  spec: {ports: [{port: 80}]}
- apiVersion: v1
  kind: Service
  metadata: {name: broken, namespace: ns1}
  spec: {ports: [{port: "eighty"}]}
- apiVersion: v1
  kind: List
  items:
  - apiVersion: v1
    kind: Node
    metadata: {name: n1}
  - apiVersion: v1
    kind: Node
    metadata: {name: bad-node}
    spec: {unschedulable: "maybe"}
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata: {name: a-1, namespace: ns1}
  addressType: IPv4
  endpoints: []
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: ignored, namespace: ns1}
  spec: {replicas: "not checked"}
`

const jsonList = `{
  "apiVersion": "v1",
  "kind": "List",
  "items": [
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "j", "namespace": "default"}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
  ]
}`

func TestLoad(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string
		// errs lists, per expected error, its class and a substring of its message.
		errs []wantErr
	}{
		{name: "empty", input: ""},
		{name: "only separators", input: "---\n---\n"},
		{name: "multi-document YAML", input: multiDoc, want: []string{
			"Service default/web", "EndpointSlice default/web-abc", "Node node-1",
		}, errs: []wantErr{
			{ErrKind, "in.yaml: document 4 (Pod ignored): kind not read: render reads Services, EndpointSlices, Nodes and AddressPools only, not Pod of v1"},
			{ErrKind, "document 5 (Service knative-ignored): kind not read: render reads Services, EndpointSlices, Nodes and AddressPools only, not Service of serving.knative.dev/v1"},
		}},
		{name: "kubectl List with bad items", input: kubectlList, want: []string{
			"Service ns1/a", "EndpointSlice ns1/a-1", "Node n1",
		}, errs: []wantErr{
			{ErrDecode, "in.yaml: document 1, item 1 (Service ns1/broken): cannot decode object: json: cannot unmarshal"},
			{ErrDecode, "in.yaml: document 1, item 2, item 1 (Node bad-node): cannot decode object"},
			{ErrKind, "document 1, item 4 (Deployment ns1/ignored): kind not read"},
		}},
		{name: "JSON List", input: jsonList, want: []string{"Service default/j"},
			errs: []wantErr{{ErrKind, "document 1, item 1 (Pod p): kind not read"}}},
		{name: "Gateway API objects", input: "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: ns}\n---\n" +
			"apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r}\n---\n" +
			"apiVersion: gateway.networking.k8s.io/v1\nkind: TCPRoute\nmetadata: {name: t, namespace: ns}\n---\n" +
			"apiVersion: gateway.networking.k8s.io/v1alpha2\nkind: HTTPRoute\nmetadata: {name: old, namespace: ns}\n",
			want: []string{"Gateway ns/gw", "HTTPRoute default/r"}, errs: []wantErr{
				{ErrKind, "document 3 (TCPRoute ns/t): kind not read: render reads GatewayClasses, Gateways, HTTPRoutes, GRPCRoutes and ReferenceGrants of the Gateway API only"},
				{ErrVersion, "document 4 (HTTPRoute ns/old): unsupported API version"}}},
		{name: "another kind, its metadata broken", input: "kind: Pod\nmetadata: {name: [a]}\n",
			errs: []wantErr{{ErrKind, "document 1 (Pod): kind not read: render does not read Pod objects"}}},
		{name: "a misspelt kind", input: "kind: Servce\nmetadata: {name: a}\n",
			errs: []wantErr{{ErrKind, "document 1 (Servce a): kind not read"}}},
		{name: "no namespace: default", input: "kind: Service\nmetadata: {name: a}\n---\nkind: EndpointSlice\nmetadata: {name: e}\naddressType: IPv4\n",
			want: []string{"Service default/a", "EndpointSlice default/e"}},
		{name: "duplicates: the first kept, both named", input: "kind: Service\nmetadata: {name: a}\n---\nkind: Service\nmetadata: {name: a, namespace: default}\n---\nkind: Node\nmetadata: {name: nx}\n---\nkind: List\nitems: [{kind: Node, metadata: {name: nx}}]\n",
			want: []string{"Service default/a", "Node nx"}, errs: []wantErr{
				{ErrDuplicate, "in.yaml: document 2 (Service default/a): duplicate object: the same object as in.yaml: document 1; the first is kept"},
				{ErrDuplicate, "in.yaml: document 4, item 0 (Node nx): duplicate object: the same object as in.yaml: document 3; the first is kept"},
			}},
		{name: "names quoted in messages", input: "kind: \"Svc\\nx\"\nmetadata: {name: \"a b\"}\n",
			errs: []wantErr{{ErrKind, `document 1 ("Svc\nx" "a b"): kind not read`}}},
		{name: "JSON stream", input: `{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"}}
			{"apiVersion":"v1","kind":"Node","metadata":{"name":"b"}}`, want: []string{"Node a", "Node b"}},
		{name: "JSON array", input: ` [{"kind":"Node","metadata":{"name":"a"}}, null]`, want: []string{"Node a"}},
		{name: "broken JSON stops", input: `{"kind":"Node","metadata":{"name":"a"}} {"kind": `,
			want: []string{"Node a"}, errs: []wantErr{{ErrSyntax, "in.yaml: document 2: invalid YAML or JSON"}}},
		{name: "typed list items inherit kind", input: `{"apiVersion":"v1","kind":"ServiceList","items":[
			{"metadata":{"name":"s1","namespace":"x"}},{"metadata":{"name":"s2","namespace":"x"},"spec":{"type":7}}]}`,
			want: []string{"Service x/s1"},
			errs: []wantErr{{ErrDecode, "document 1, item 1 (Service x/s2): cannot decode object"}}},
		{name: "bad YAML document in the middle", input: "kind: Node\nmetadata: {name: a}\n---\nkind: [unclosed\n---\nkind: Node\nmetadata: {name: b}\n",
			want: []string{"Node a", "Node b"}, errs: []wantErr{{ErrSyntax, "in.yaml: document 2: invalid YAML or JSON"}}},
		{name: "bad separator", input: "kind: Node\nmetadata: {name: a}\n--- junk\nkind: Node\nmetadata: {name: b}\n",
			want: []string{"Node b"}, errs: []wantErr{{ErrSyntax, "in.yaml: document 1: invalid YAML or JSON"}}},
		{name: "scalar document", input: "just text\n---\nkind: Node\nmetadata: {name: a}\n",
			want: []string{"Node a"}, errs: []wantErr{{ErrDecode, "document 1: cannot decode object: not an object"}}},
		{name: "wrong type for kind", input: "kind: [Service]\nmetadata: {name: a}\n"},
		{name: "wrong type for name of a Service", input: "kind: Service\nmetadata: {name: [a]}\n",
			errs: []wantErr{{ErrDecode, "document 1 (Service): cannot decode object"}}},
		{name: "old EndpointSlice version", input: "apiVersion: discovery.k8s.io/v1beta1\nkind: EndpointSlice\nmetadata: {name: e, namespace: ns}\n",
			errs: []wantErr{{ErrVersion, `document 1 (EndpointSlice ns/e): unsupported API version: want discovery.k8s.io/v1, got "discovery.k8s.io/v1beta1"`}}},
		{name: "apiVersion omitted", input: "kind: EndpointSlice\nmetadata: {name: e, namespace: ns}\naddressType: IPv4\n",
			want: []string{"EndpointSlice ns/e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, errs := Load(strings.NewReader(tt.input), "in.yaml")
			if got := names(set); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("loaded %q, want %q", got, tt.want)
			}
			checkErrs(t, errs, tt.errs)
		})
	}
}

type wantErr struct {
	class error
	text  string
}

func checkErrs(t *testing.T, errs []error, want []wantErr) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d errors %v, want %d", len(errs), errs, len(want))
	}
	for i, err := range errs {
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("error %v is not an *Error", err)
		}
		if !errors.Is(err, want[i].class) {
			t.Errorf("error %q: errors.Is(%v) = false", err, want[i].class)
		}
		if !strings.Contains(err.Error(), want[i].text) {
			t.Errorf("error %q, want it to contain %q", err, want[i].text)
		}
	}
}

func TestLoadFields(t *testing.T) {
	set, errs := Load(strings.NewReader(multiDoc), "x")
	if len(errs) != 2 { // the Pod and knative's Service
		t.Fatal(errs)
	}
	svc := set.Services[0]
	if svc.Annotations["haproxy-k8s-sync.io/enabled"] != "true" || svc.Spec.Type != "NodePort" ||
		svc.Spec.Ports[0].NodePort != 30080 || svc.Spec.Ports[0].TargetPort.IntValue() != 8080 {
		t.Errorf("service decoded as %+v", svc)
	}
	es := set.EndpointSlices[0]
	if es.APIVersion != "discovery.k8s.io/v1" || es.Endpoints[0].Addresses[0] != "10.0.0.1" ||
		!*es.Endpoints[0].Conditions.Ready || *es.Ports[0].Port != 8080 ||
		es.Labels["kubernetes.io/service-name"] != "web" {
		t.Errorf("endpointslice decoded as %+v", es)
	}
	if n := set.Nodes[0]; n.Status.Addresses[0].Address != "192.168.1.10" {
		t.Errorf("node decoded as %+v", n)
	}
}

func TestLoadReadError(t *testing.T) {
	boom := errors.New("boom")
	for _, tt := range []struct {
		name  string
		input string
	}{
		{"YAML", "kind: Node\nmetadata: {name: a}\n---\nkind: No"},
		{"JSON", `{"kind":"Node","metadata":{"name":"a"}} {"kind":"No`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set, errs := Load(&failAfter{s: tt.input, err: boom}, "f")
			if got := names(set); !reflect.DeepEqual(got, []string{"Node a"}) {
				t.Errorf("loaded %q", got)
			}
			checkErrs(t, errs, []wantErr{{ErrRead, "f: document 2: cannot read input: boom"}})
			if !errors.Is(errs[0], boom) {
				t.Errorf("cause lost: %v", errs[0])
			}
		})
	}
}

// failAfter returns s, then err instead of io.EOF.
type failAfter struct {
	s   string
	err error
}

func (f *failAfter) Read(p []byte) (int, error) {
	if f.s == "" {
		return 0, f.err
	}
	n := copy(p, f.s)
	f.s = f.s[n:]
	return n, nil
}

func TestMerge(t *testing.T) {
	a, _ := Load(strings.NewReader(multiDoc), "a")
	b, _ := Load(strings.NewReader(jsonList), "b")
	var s Set
	s.Merge(a)
	s.Merge(b)
	want := []string{"Service default/web", "Service default/j", "EndpointSlice default/web-abc", "Node node-1"}
	if got := names(s); !reflect.DeepEqual(got, want) {
		t.Errorf("merged %q, want %q", got, want)
	}
	// The same objects again, from another file: each a duplicate naming
	// both places, none added.
	again, _ := Load(strings.NewReader(jsonList), "c")
	checkErrs(t, s.Merge(again), []wantErr{{ErrDuplicate, "c: document 1, item 0 (Service default/j): duplicate object: the same object as b: document 1, item 0"}})
	if got := names(s); !reflect.DeepEqual(got, want) {
		t.Errorf("merged %q, want %q", got, want)
	}
}

// Lists nested beyond MaxDepth are refused, once, naming where, and the
// rest of the stream still loads; a stream nested a thousand deep costs a
// few decodes, not one per level (allocations stay bounded).
func TestLoadNestingBound(t *testing.T) {
	const svc = `{"apiVersion":"v1","kind":"Service","metadata":{"name":"ok","namespace":"default"}}`
	nest := func(d int, inner string) string {
		return strings.Repeat(`{"kind":"List","items":[`, d) + inner + strings.Repeat(`]}`, d)
	}
	for _, tt := range []struct {
		name   string
		in     string
		got    []string
		errs   int
		errMsg string
	}{
		{"at the bound", nest(MaxDepth, svc), []string{"Service default/ok"}, 0, ""},
		{"one deeper", nest(MaxDepth+1, svc), nil, 1, "document 1, item 0, item 0, item 0, item 0, item 0, item 0, item 0, item 0: lists nested too deep"},
		{"arrays", strings.Repeat("[", MaxDepth+1) + svc + strings.Repeat("]", MaxDepth+1), nil, 1, "lists nested too deep"},
		{"deep, then a good document", nest(1000, svc) + "\n" + svc, []string{"Service default/ok"}, 1, "lists nested too deep"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set, errs := Load(strings.NewReader(tt.in), "in")
			if !reflect.DeepEqual(names(set), tt.got) {
				t.Errorf("loaded %v, want %v", names(set), tt.got)
			}
			if len(errs) != tt.errs {
				t.Fatalf("errors %v, want %d", errs, tt.errs)
			}
			if tt.errs > 0 && (!errors.Is(errs[0], ErrTooDeep) || !strings.Contains(errs[0].Error(), tt.errMsg)) {
				t.Errorf("error %v, want ErrTooDeep with %q", errs[0], tt.errMsg)
			}
		})
	}
	// 20 KB nested as deep as it goes: the old loader decoded every level
	// again (size times depth: seconds and hundreds of MB); now a bounded
	// number of passes over it.
	deep := nest(800, svc)
	if a := testing.AllocsPerRun(2, func() { Load(strings.NewReader(deep), "in") }); a > 2000 {
		t.Errorf("loading %d bytes nested 800 deep allocates %v times", len(deep), a)
	}
}
