package e2e

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestBurstShapes: HKS_BENCH_BURST_SHAPES' names are read in order, an
// unknown one is an error naming the known ones, and each shape's
// Service is what its name says.
func TestBurstShapes(t *testing.T) {
	w := &newSvcWorld{services: 10, endpoints: 2}
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "", want: nil},
		{in: "full", want: []string{"full"}},
		{in: " full, svc ,slice,noports,clusterip,headless", want: []string{"full", "svc", "slice", "noports", "clusterip", "headless"}},
		{in: "full,bogus", wantErr: `"bogus" is not a burst shape (one of full, svc, slice, noports, clusterip, headless)`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseBurstShapes(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range got {
				names = append(names, s.name)
			}
			if strings.Join(names, ",") != strings.Join(tc.want, ",") {
				t.Errorf("shapes %v, want %v", names, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		shape      string
		n          int
		nodePorts  int // nodePort and healthCheckNodePort given
		clusterIP  string
		typ        corev1.ServiceType
		slice, svc bool
	}{
		{shape: "full", nodePorts: 2, typ: corev1.ServiceTypeLoadBalancer, slice: true, svc: true},
		{shape: "svc", nodePorts: 2, typ: corev1.ServiceTypeLoadBalancer, svc: true},
		{shape: "slice", slice: true},
		{shape: "noports", typ: corev1.ServiceTypeLoadBalancer, slice: true, svc: true},
		{shape: "clusterip", n: 255, nodePorts: 2, clusterIP: "172.20.1.0", typ: corev1.ServiceTypeLoadBalancer, slice: true, svc: true},
		{shape: "headless", clusterIP: corev1.ClusterIPNone, typ: corev1.ServiceTypeClusterIP, slice: true, svc: true},
	} {
		t.Run("object-"+tc.shape, func(t *testing.T) {
			s := burstShapes[indexShape(tc.shape)]
			if s.slice != tc.slice || (s.service != nil) != tc.svc {
				t.Fatalf("slice %v, Service %v; want %v, %v", s.slice, s.service != nil, tc.slice, tc.svc)
			}
			if s.service == nil {
				return
			}
			svc := s.service(w, 3, tc.n)
			ports := 0
			if svc.Spec.HealthCheckNodePort != 0 {
				ports++
			}
			if svc.Spec.Ports[0].NodePort != 0 {
				ports++
			}
			if ports != tc.nodePorts || svc.Spec.ClusterIP != tc.clusterIP || svc.Spec.Type != tc.typ || svc.Name != "new-00003" {
				t.Errorf("%s: node ports %d, clusterIP %q, type %s; want %d, %q, %s",
					svc.Name, ports, svc.Spec.ClusterIP, svc.Spec.Type, tc.nodePorts, tc.clusterIP, tc.typ)
			}
		})
	}
}

// TestBurstLoadAccounts: the apiserver's histograms are kept by the
// labels that tell them apart (watches left out) and their differences
// are listed largest first.
func TestBurstLoadAccounts(t *testing.T) {
	metrics := func(postSvc, postSvcSum, etcdSum string) []byte {
		return []byte(`# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{component="apiserver",resource="services",verb="POST",le="+Inf"} ` + postSvc + `
apiserver_request_duration_seconds_sum{component="apiserver",resource="services",verb="POST"} ` + postSvcSum + `
apiserver_request_duration_seconds_count{component="apiserver",resource="services",verb="POST"} ` + postSvc + `
apiserver_request_duration_seconds_bucket{component="apiserver",resource="services",verb="WATCH",le="+Inf"} 3
apiserver_request_duration_seconds_sum{component="apiserver",resource="services",verb="WATCH"} 900
apiserver_request_duration_seconds_count{component="apiserver",resource="services",verb="WATCH"} 3
# TYPE etcd_request_duration_seconds histogram
etcd_request_duration_seconds_bucket{operation="create",type="services",le="+Inf"} 10
etcd_request_duration_seconds_sum{operation="create",type="services"} ` + etcdSum + `
etcd_request_duration_seconds_count{operation="create",type="services"} 10
# TYPE apiserver_other_total counter
apiserver_other_total 5
`)
	}
	a := parseHists(metrics("10", "1", "0.5"))
	if len(a) != 2 || a["request POST services"] != (hist{count: 10, sum: 1}) || a["etcd_request create services"] != (hist{count: 10, sum: 0.5}) {
		t.Fatalf("parsed %v", a)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{name: "grew", b: metrics("110", "5", "0.5"), want: "request POST services: 100, 4000 ms (mean 40.00)"},
		{name: "none", b: metrics("10", "1", "0.5"), want: "no request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := histDiff(a, parseHists(tc.b)); got != tc.want {
				t.Errorf("diff %q, want %q", got, tc.want)
			}
		})
	}
	if got := histDiff(nil, a); !strings.HasPrefix(got, "request POST services: 10, 1000 ms") {
		t.Errorf("diff from nothing %q, want the largest first", got)
	}
}
