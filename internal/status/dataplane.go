package status

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/dataplaneapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// SourceDataplane is Report.Source when the report was read through the
// HAProxy Data Plane API.
const SourceDataplane = "dataplane"

// DataplaneOptions say what the controller owns through the API.
type DataplaneOptions struct {
	// Seed is single-Service mode's backend (the operator's); empty: the
	// sections named fe_/be_NAMESPACE_NAME_PORT (dataplaneapi.Owned).
	Seed string
	// Service (NAMESPACE/NAME) names the seed's row.
	Service string
}

// CollectDataplane reads what the controller owns through the Data Plane
// API: the configuration of its backends and servers, their runtime state
// and the open transactions. There is no structure hash in this mode: the
// report is in sync when no transaction is open and every configured
// server runs as configured (present, same address and port, in
// maintenance at runtime exactly when its configuration says so; drain
// counts as in service). Report.Problems says what is not.
func CollectDataplane(ctx context.Context, c *dataplane.Client, opts DataplaneOptions) (Report, error) {
	rep := Report{Source: SourceDataplane}
	txs, err := c.Transactions(ctx)
	if err != nil {
		return Report{}, err
	}
	for _, t := range txs {
		if t.Status == "in_progress" {
			rep.Problems = append(rep.Problems, fmt.Sprintf("transaction %s is open (on configuration version %d)", t.ID, t.Version))
		}
	}
	var frontends, backends []dataplane.Object
	full := map[string][]string{"full_section": {"true"}}
	if _, err := c.Do(ctx, "GET", dataplane.FrontendsPath, full, nil, &frontends); err != nil {
		return Report{}, err
	}
	if _, err := c.Do(ctx, "GET", dataplane.BackendsPath, full, nil, &backends); err != nil {
		return Report{}, err
	}
	front := map[string][]dataplane.Object{} // backend → frontends using it by default
	for _, f := range frontends {
		if be, _ := f["default_backend"].(string); be != "" {
			front[be] = append(front[be], f)
		}
	}
	nodes, err := nodesDown(ctx, c, opts, backends)
	if err != nil {
		return Report{}, err
	}
	seen := false
	for _, b := range backends {
		name, _ := b["name"].(string)
		if (opts.Seed != "" && name != opts.Seed) || (opts.Seed == "" && !dataplaneapi.Owned(name)) {
			continue
		}
		seen = true
		row := Row{Service: opts.Service, Backend: name, LastChange: -1, Listen: []string{}}
		if opts.Seed == "" {
			row.Service = serviceOf("fe" + strings.TrimPrefix(name, "be"))
		}
		var fes []string
		for _, f := range front[name] {
			fn, _ := f["name"].(string)
			fes = append(fes, fn)
			row.Listen = append(row.Listen, binds(f)...)
		}
		row.Frontend = strings.Join(fes, ",")
		problems, err := compare(ctx, c, name, children(b, "servers"), nodes, &row)
		if err != nil {
			return Report{}, err
		}
		rep.Problems = append(rep.Problems, problems...)
		rep.Rows = append(rep.Rows, row)
	}
	if opts.Seed != "" && !seen {
		rep.Problems = append(rep.Problems, fmt.Sprintf("backend %s does not exist in the configuration", opts.Seed))
	}
	sort.Slice(rep.Rows, func(i, j int) bool { return rep.Rows[i].Backend < rep.Rows[j].Backend })
	rep.InSync = len(rep.Problems) == 0
	return rep, nil
}

// compare counts the servers of backend be by their runtime state and
// lists where the runtime differs from the configuration. A server
// configured in maintenance is a free slot or a server the driver left
// out: it is not counted while it is in maintenance at runtime too.
// A server following a node in maintenance (nodes names the _nodes slots
// that are) reads "maint" at runtime whatever its own state: counted in
// maintenance, and not a difference.
func compare(ctx context.Context, c *dataplane.Client, be string, configured []dataplane.Object, nodes map[string]bool, row *Row) ([]string, error) {
	rt, err := c.RuntimeServers(ctx, be)
	if errors.Is(err, dataplane.ErrNotFound) {
		return []string{fmt.Sprintf("backend %s is configured but HAProxy does not run it (not reloaded, or the reload failed)", be)}, nil
	}
	if err != nil {
		return nil, err
	}
	running := map[string]dataplane.Object{}
	for _, s := range rt {
		n, _ := s["name"].(string)
		running[n] = s
	}
	var out []string
	for _, s := range configured {
		n, _ := s["name"].(string)
		r, ok := running[n]
		if !ok {
			out = append(out, fmt.Sprintf("%s/%s is configured but not running", be, n))
			continue
		}
		delete(running, n)
		cfgMaint := s["maintenance"] == "enabled"
		admin, _ := r["admin_state"].(string)
		tr, _ := s["track"].(string)
		if cfgMaint != (admin == "maint") && !(admin == "maint" && nodes[tr]) {
			out = append(out, fmt.Sprintf("%s/%s: maintenance %s in the configuration, admin_state %s at runtime", be, n, map[bool]string{true: "enabled", false: "disabled"}[cfgMaint], admin))
		}
		if a, b := endpoint(s), endpoint(r); a != b {
			out = append(out, fmt.Sprintf("%s/%s: %s in the configuration, %s at runtime", be, n, a, b))
		}
		switch {
		case cfgMaint && admin == "maint": // free slot
		case admin == "maint":
			row.Maint++
		case admin == "drain":
			row.Draining++
		case r["operational_state"] == "down":
			row.Down++
		default: // up, stopping
			row.Up++
		}
	}
	for _, n := range sortedNames(running) {
		out = append(out, fmt.Sprintf("%s/%s runs but is not configured", be, n))
	}
	return out, nil
}

// children lists a full section's binds or servers, by name.
func children(o dataplane.Object, key string) []dataplane.Object {
	m, _ := o[key].(map[string]any)
	var out []dataplane.Object
	for _, n := range sortedNames(m) {
		if c, ok := m[n].(map[string]any); ok {
			out = append(out, c)
		}
	}
	return out
}

func binds(f dataplane.Object) []string {
	var out []string
	for _, b := range children(f, "binds") {
		out = append(out, endpoint(b))
	}
	return out
}

// endpoint is ADDRESS:PORT of a bind or server as the API sends it.
func endpoint(o dataplane.Object) string {
	a, _ := o["address"].(string)
	port := o["port"]
	if port == nil {
		port = 0 // a server of _nodes: configured without a port, running on 0
	}
	return net.JoinHostPort(a, fmt.Sprint(port))
}

// nodesDown names the slots of the _nodes backend (every-Service mode,
// servers following their node) in maintenance at runtime: "_nodes/sK".
func nodesDown(ctx context.Context, c *dataplane.Client, opts DataplaneOptions, backends []dataplane.Object) (map[string]bool, error) {
	out := map[string]bool{}
	if opts.Seed != "" || !slices.ContainsFunc(backends, func(b dataplane.Object) bool { return b["name"] == model.NodesBackend }) {
		return out, nil
	}
	rt, err := c.RuntimeServers(ctx, model.NodesBackend)
	if errors.Is(err, dataplane.ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, s := range rt {
		if s["admin_state"] == "maint" {
			out[model.NodesBackend+"/"+fmt.Sprint(s["name"])] = true
		}
	}
	return out, nil
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
