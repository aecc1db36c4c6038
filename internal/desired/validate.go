package desired

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// ReasonInvalidService: the Service is not what the apiserver admits (a
// name that is no DNS label, a port number outside 1-65535): render
// reads files, which nothing validated. It is not configured.
const ReasonInvalidService = "InvalidService"

// invalidService lists what makes svc impossible to configure as it is:
// its namespace and name, which every identifier of its frontends,
// backends and UDP ports is built from (model.Name keeps those safe
// anyway), and its port numbers, which would otherwise wrap when
// converted to a port (70000 to 4464, -80 to 65456). Values are quoted
// and cut short (settings.ShowValue): they may come from a hostile file.
func invalidService(svc *corev1.Service) []string {
	var out []string
	// An empty namespace is the loader's to default; not refused here.
	if ns := svc.Namespace; ns != "" && len(validation.IsDNS1123Label(ns)) > 0 {
		out = append(out, "namespace "+settings.ShowValue(ns)+" is not a DNS label")
	}
	if len(validation.IsDNS1035Label(svc.Name)) > 0 {
		out = append(out, "name "+settings.ShowValue(svc.Name)+" is not a DNS label")
	}
	for _, p := range svc.Spec.Ports {
		for _, f := range []struct {
			field string
			v     int32
			zero  bool // 0 means unset
		}{{"port", p.Port, false}, {"nodePort", p.NodePort, true}} {
			if !model.ValidPort(f.v) && !(f.zero && f.v == 0) {
				out = append(out, "port "+settings.ShowValue(p.Name)+": "+f.field+" "+strconv.Itoa(int(f.v))+" is outside 1-65535")
			}
		}
		if tp := p.TargetPort; tp.StrVal == "" && tp.IntVal != 0 && !model.ValidPort(tp.IntVal) {
			out = append(out, "port "+settings.ShowValue(p.Name)+": targetPort "+strconv.Itoa(int(tp.IntVal))+" is outside 1-65535")
		}
	}
	if hc := svc.Spec.HealthCheckNodePort; hc != 0 && !model.ValidPort(hc) {
		out = append(out, "healthCheckNodePort "+strconv.Itoa(int(hc))+" is outside 1-65535")
	}
	return out
}

// badAddress describes an address text that is no server's: "" when
// it is one; a is the parsed address when valid.
func badAddress(text string) (a netip.Addr, why string) {
	a, err := netip.ParseAddr(text)
	if err != nil {
		return netip.Addr{}, settings.ShowValue(text) + " is not an IP address"
	}
	if p := model.ServerAddrProblem(a); p != "" {
		return netip.Addr{}, settings.ShowValue(text) + " is " + p
	}
	return a.Unmap(), ""
}

// skippedAddresses names every node InternalIP and endpoint address that
// is no server (unparsable, unspecified, multicast, broadcast, zoned), so
// that none vanishes without a word: Result.Skipped.
func skippedAddresses(nodes []*corev1.Node, sls []*Slice) []string {
	var out []string
	for _, n := range nodes {
		for _, why := range NodeAddrsSkipped(n) {
			out = append(out, fmt.Sprintf("Node %s: %s", settings.ShowValue(n.Name), why))
		}
	}
	for _, sl := range sls {
		for _, why := range sl.Skipped {
			out = append(out, fmt.Sprintf("EndpointSlice %s: endpoint address %s: not a server", settings.ShowValue(sl.Namespace+"/"+sl.Name), why))
		}
	}
	slices.Sort(out)
	return out
}

// NodeAddrsSkipped says, for each InternalIP of node n that is no server
// (unparsable, unspecified, multicast, broadcast, zoned), why: the
// controller's Event on the node, and Result.Skipped.
func NodeAddrsSkipped(n *corev1.Node) []string {
	var out []string
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if _, why := badAddress(a.Address); why != "" {
			out = append(out, "InternalIP "+why+": not a server")
		}
	}
	return out
}

// joinLines joins messages for one Problem.
func joinLines(msgs []string) string { return strings.Join(msgs, "; ") }
