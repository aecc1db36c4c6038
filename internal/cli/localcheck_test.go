package cli

import (
	"bytes"
	"strings"
	"testing"
)

// localCheckCluster is a Local LoadBalancer Service with a
// healthCheckNodePort, ready on one node, and one without (a NodePort
// Service has none).
const localCheckCluster = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata: {name: lb, namespace: default}
  spec:
    type: LoadBalancer
    loadBalancerClass: haproxy-k8s-sync.io/lb
    externalTrafficPolicy: Local
    healthCheckNodePort: 31999
    ports:
    - {name: http, port: 80, nodePort: 30080, protocol: TCP}
- apiVersion: v1
  kind: Service
  metadata: {name: nohc, namespace: default}
  spec:
    type: LoadBalancer
    loadBalancerClass: haproxy-k8s-sync.io/lb
    externalTrafficPolicy: Local
    ports:
    - {name: http, port: 81, nodePort: 30081, protocol: TCP}
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
  status:
    addresses: [{type: InternalIP, address: 192.0.2.10}]
    conditions: [{type: Ready, status: "True"}]
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata: {name: lb-1, namespace: default, labels: {kubernetes.io/service-name: lb}}
  addressType: IPv4
  ports: [{name: http, port: 8080, protocol: TCP}]
  endpoints: [{addresses: [10.0.0.1], nodeName: n1, conditions: {ready: true}}]
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata: {name: nohc-1, namespace: default, labels: {kubernetes.io/service-name: nohc}}
  addressType: IPv4
  ports: [{name: http, port: 8080, protocol: TCP}]
  endpoints: [{addresses: [10.0.0.2], nodeName: n1, conditions: {ready: true}}]
`

// TestLocalCheckDefault: by default a Local Service with a
// healthCheckNodePort is checked there on each server (issue 29: the node
// check, kube-proxy's /healthz, answers 200 before the node's kube-proxy
// serves the Service's endpoint; only the healthCheckNodePort waits for
// it), so the driver holds a returning server until kube-proxy serves
// it; one without a healthCheckNodePort, and every Local Service with
// --local-check=service-port, follows its node.
func TestLocalCheckDefault(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		want, nope []string
	}{
		{"default", nil,
			[]string{"option httpchk GET /\n", "port 31999", "server s1 192.0.2.10:30081 track _nodes/s1\n"},
			[]string{"server s1 192.0.2.10:30080 track"}},
		{"service-port", []string{"--local-check=service-port"},
			[]string{"server s1 192.0.2.10:30080 track _nodes/s1\n", "server s1 192.0.2.10:30081 track _nodes/s1\n"},
			[]string{"port 31999"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"-f", "-"}, tc.args...)
			if err := renderCmd(args, env(nil), strings.NewReader(localCheckCluster), &out, &errb); err != nil {
				t.Fatalf("render: %v\n%s", err, errb.String())
			}
			cfg := out.String()
			for _, w := range tc.want {
				if !strings.Contains(cfg, w) {
					t.Errorf("config lacks %q:\n%s", w, cfg)
				}
			}
			for _, n := range tc.nope {
				if strings.Contains(cfg, n) {
					t.Errorf("config has %q:\n%s", n, cfg)
				}
			}
		})
	}
}
