// Package apiserver is the kube-apiserver load-balancer mode (`run
// --mode=apiserver`): where the apiservers come from (ordered sources, the
// first non-empty one wins), the pure model HAProxy runs for them (one
// frontend, one backend health-checked with GET /readyz), the list kept on
// disk for restarts while the API is unreachable, and the small loop that
// drives the same HAProxy driver as the Service mode.
package apiserverlb

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Source names, as given to --apiserver-sources.
const (
	SourceEndpointSlice = "endpointslice"
	SourceNodes         = "nodes"
	SourceConfigMap     = "configmap"
	SourceStatic        = "static"
	// SourceStateFile is not selectable: it names the list read back from
	// --apiserver-state-file, served until the cluster answers.
	SourceStateFile = "state-file"
)

// DefaultSources is the default of --apiserver-sources.
const DefaultSources = SourceEndpointSlice + "," + SourceNodes + "," + SourceStatic

// ControlPlaneLabel marks the Nodes the nodes source takes.
const ControlPlaneLabel = "node-role.kubernetes.io/control-plane"

// ConfigMapKey is the key of the ConfigMap source's list.
const ConfigMapKey = "servers"

// maxServers bounds a list (a ConfigMap is user input).
const maxServers = 1024

// ErrInvalid classifies bad user input: a flag or a ConfigMap that does
// not follow the grammar.
var ErrInvalid = errors.New("invalid")

// ParseSources parses the comma-separated, ordered list of sources.
func ParseSources(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		switch p {
		case "":
			continue
		case SourceEndpointSlice, SourceNodes, SourceConfigMap, SourceStatic:
		default:
			return nil, fmt.Errorf("%w source %q: want %s, %s, %s or %s", ErrInvalid, p,
				SourceEndpointSlice, SourceNodes, SourceConfigMap, SourceStatic)
		}
		if slices.Contains(out, p) {
			return nil, fmt.Errorf("%w: source %q given twice", ErrInvalid, p)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no source", ErrInvalid)
	}
	return out, nil
}

// ParseServer parses one apiserver address: an IP address with a port
// (192.0.2.1:6443, [2001:db8::1]:6443) or without (then defaultPort).
// Host names are refused: HAProxy's servers are changed at runtime by
// address.
func ParseServer(s string, defaultPort uint16) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		if ap.Port() == 0 {
			return ap, fmt.Errorf("%w server %q: port 0, want 1-65535", ErrInvalid, s)
		}
		return check(ap, s)
	}
	if host, port, err := net.SplitHostPort(s); err == nil {
		if _, err := netip.ParseAddr(host); err == nil {
			// An address with a port netip does not read: say what is
			// wrong with the port, not that the whole is no address.
			return netip.AddrPort{}, fmt.Errorf("%w server %q: port %q, want 1-65535", ErrInvalid, s, port)
		}
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.AddrPort{}, fmt.Errorf("%w server %q: want IP or IP:PORT ([IPv6]:PORT)", ErrInvalid, s)
	}
	if defaultPort == 0 {
		return netip.AddrPort{}, fmt.Errorf("%w server %q: no port, and the default port is 0 (want 1-65535)", ErrInvalid, s)
	}
	return check(netip.AddrPortFrom(a, defaultPort), s)
}

func check(ap netip.AddrPort, s string) (netip.AddrPort, error) {
	a := ap.Addr().Unmap()
	if a.IsUnspecified() || a.IsMulticast() || ap.Addr().Zone() != "" {
		return ap, fmt.Errorf("%w server %q: not a unicast address", ErrInvalid, s)
	}
	return netip.AddrPortFrom(a, ap.Port()), nil
}

// ParseServers parses a list of servers, one per line or comma-separated;
// blank lines and lines starting with # are skipped. Any bad entry makes
// the whole list invalid (a typo never silently drops a server). The
// result is sorted and without duplicates.
func ParseServers(text string, defaultPort uint16) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, f := range strings.Split(line, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			ap, err := ParseServer(f, defaultPort)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n+1, err)
			}
			out = append(out, ap)
		}
	}
	if len(out) > maxServers {
		return nil, fmt.Errorf("%w: %d servers, at most %d", ErrInvalid, len(out), maxServers)
	}
	return normalize(out), nil
}

func normalize(s []netip.AddrPort) []netip.AddrPort {
	slices.SortFunc(s, func(a, b netip.AddrPort) int { return a.Compare(b) })
	return slices.Compact(s)
}

// FromEndpointSlices lists the apiservers of the default/kubernetes
// EndpointSlices, which the apiservers keep themselves (each renews a
// lease; an expired one leaves the slice). Endpoints explicitly not ready
// are left out; the port is the one named https, or the only one.
func FromEndpointSlices(eps []*discoveryv1.EndpointSlice) []netip.AddrPort {
	var out []netip.AddrPort
	for _, es := range eps {
		port, ok := slicePort(es)
		if !ok {
			continue
		}
		for _, ep := range es.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				if ap, err := ParseServer(a, port); err == nil {
					out = append(out, ap)
				}
			}
		}
	}
	return normalize(out)
}

func slicePort(es *discoveryv1.EndpointSlice) (uint16, bool) {
	var only *discoveryv1.EndpointPort
	for i, p := range es.Ports {
		if p.Port == nil || *p.Port <= 0 || *p.Port > 65535 {
			continue
		}
		if p.Name != nil && *p.Name == "https" {
			return uint16(*p.Port), true
		}
		if only != nil {
			return 0, false // several ports, none named https
		}
		only = &es.Ports[i]
	}
	if only == nil {
		return 0, false
	}
	return uint16(*only.Port), true
}

// FromNodes lists the InternalIP of every Node with the control-plane
// label, with port. A Node without an InternalIP is skipped.
func FromNodes(nodes []*corev1.Node, port uint16) []netip.AddrPort {
	var out []netip.AddrPort
	for _, n := range nodes {
		if _, ok := n.Labels[ControlPlaneLabel]; !ok {
			continue
		}
		for _, a := range n.Status.Addresses {
			if a.Type != corev1.NodeInternalIP {
				continue
			}
			if ap, err := ParseServer(a.Address, port); err == nil {
				out = append(out, ap)
				break
			}
		}
	}
	return normalize(out)
}

// FromConfigMap parses the servers key of the ConfigMap; a missing
// ConfigMap or key is an empty list, a bad entry an error.
func FromConfigMap(cm *corev1.ConfigMap, defaultPort uint16) ([]netip.AddrPort, error) {
	if cm == nil {
		return nil, nil
	}
	text, ok := cm.Data[ConfigMapKey]
	if !ok {
		return nil, nil
	}
	s, err := ParseServers(text, defaultPort)
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s key %s: %w", cm.Namespace, cm.Name, ConfigMapKey, err)
	}
	return s, nil
}

// Found is what one source yields in a pass.
type Found struct {
	Servers []netip.AddrPort
	Err     error // the source's input is invalid
}

// Choice is the list applied, and where it came from.
type Choice struct {
	Source  string
	Servers []netip.AddrPort
}

// Decision is the outcome of Choose.
type Decision struct {
	Choice
	// Kept: no source gave a usable list, so the last one stays. Why
	// says which (every source empty, or an invalid source).
	Kept bool
	Why  error
}

// Choose applies the preference order: the first source with a non-empty
// list wins. An invalid source (a ConfigMap with a bad line) stops the
// search and keeps the last list: later sources are not a fallback for a
// broken one. When every source is empty the last list stays too: an
// empty list never replaces servers.
func Choose(order []string, found map[string]Found, last Choice) Decision {
	for _, src := range order {
		f := found[src]
		if f.Err != nil {
			return Decision{Choice: last, Kept: true, Why: fmt.Errorf("source %s: %w", src, f.Err)}
		}
		if len(f.Servers) > 0 {
			return Decision{Choice: Choice{Source: src, Servers: f.Servers}}
		}
	}
	return Decision{Choice: last, Kept: true, Why: errors.New("every source is empty")}
}

// FormatServers renders a list for logs and the state file.
func FormatServers(s []netip.AddrPort) []string {
	out := make([]string, len(s))
	for i, ap := range s {
		out[i] = ap.String()
	}
	return out
}
