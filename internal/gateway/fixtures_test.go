package gateway

import (
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func meta(ns, name string, age int) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 3, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(age) * time.Second))}
}

func class(name, controller string) *gwv1.GatewayClass {
	return &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1}, Spec: gwv1.GatewayClassSpec{ControllerName: gwv1.GatewayController(controller)}}
}

func listenerOf(name string, proto gwv1.ProtocolType, port int32, host string) gwv1.Listener {
	l := gwv1.Listener{Name: gwv1.SectionName(name), Protocol: proto, Port: gwv1.PortNumber(port)}
	if host != "" {
		h := gwv1.Hostname(host)
		l.Hostname = &h
	}
	if proto == gwv1.TLSProtocolType {
		m := gwv1.TLSModePassthrough
		l.TLS = &gwv1.ListenerTLSConfig{Mode: &m}
	}
	return l
}

func gateway(ns, name, cls string, age int, ls ...gwv1.Listener) *gwv1.Gateway {
	return &gwv1.Gateway{ObjectMeta: meta(ns, name, age), Spec: gwv1.GatewaySpec{GatewayClassName: gwv1.ObjectName(cls), Listeners: ls}}
}

func parent(gw, section string) gwv1.ParentReference {
	p := gwv1.ParentReference{Name: gwv1.ObjectName(gw)}
	if section != "" {
		s := gwv1.SectionName(section)
		p.SectionName = &s
	}
	return p
}

func ref(ns, svc string, port, weight int32) gwv1.BackendRef {
	p := gwv1.PortNumber(port)
	r := gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(svc), Port: &p}, Weight: &weight}
	if ns != "" {
		n := gwv1.Namespace(ns)
		r.Namespace = &n
	}
	return r
}

func tcpRoute(ns, name string, age int, parents []gwv1.ParentReference, refs ...gwv1.BackendRef) *gwv1.TCPRoute {
	return &gwv1.TCPRoute{ObjectMeta: meta(ns, name, age), Spec: gwv1.TCPRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parents}, Rules: []gwv1.TCPRouteRule{{BackendRefs: refs}}}}
}

func tlsRoute(ns, name string, age int, parents []gwv1.ParentReference, hosts []string, refs ...gwv1.BackendRef) *gwv1.TLSRoute {
	r := &gwv1.TLSRoute{ObjectMeta: meta(ns, name, age), Spec: gwv1.TLSRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parents}, Rules: []gwv1.TLSRouteRule{{BackendRefs: refs}}}}
	for _, h := range hosts {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gwv1.Hostname(h))
	}
	return r
}

func udpRoute(ns, name string, age int, parents []gwv1.ParentReference, refs ...gwv1.BackendRef) *gwv1.UDPRoute {
	return &gwv1.UDPRoute{ObjectMeta: meta(ns, name, age), Spec: gwv1.UDPRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parents}, Rules: []gwv1.UDPRouteRule{{BackendRefs: refs}}}}
}

// service is a Service with one port (TCP or UDP) and a slice of ready
// endpoints at addrs:target.
func service(ns, name string, proto corev1.Protocol, port, target int32, addrs ...string) (*corev1.Service, *desired.Slice) {
	s := &corev1.Service{ObjectMeta: meta(ns, name, 0), Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "p", Protocol: proto, Port: port}}}}
	pn, ready := "p", true
	sl := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-x", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: &pn, Protocol: &proto, Port: &target}}}
	for _, a := range addrs {
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
	}
	return s, desired.SliceOf(sl)
}

func grant(ns, fromNS, kind, svc string) *gwv1beta1.ReferenceGrant {
	g := &gwv1beta1.ReferenceGrant{ObjectMeta: meta(ns, "grant", 0), Spec: gwv1beta1.ReferenceGrantSpec{
		From: []gwv1beta1.ReferenceGrantFrom{{Group: gwv1.GroupName, Kind: gwv1.Kind(kind), Namespace: gwv1.Namespace(fromNS)}},
		To:   []gwv1beta1.ReferenceGrantTo{{Group: "", Kind: "Service"}}}}
	if svc != "" {
		n := gwv1.ObjectName(svc)
		g.Spec.To[0].Name = &n
	}
	return g
}

var lbAddr = netip.MustParseAddr("127.0.0.1")
