package cli

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/runtimeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/objects"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// runGateway renders the Gateway API objects of set (GatewayClasses,
// Gateways, HTTPRoutes, GRPCRoutes, ReferenceGrants, with the Services and
// EndpointSlices they name) as run --mode=gateway serves them with the
// local HAProxy on every address: haproxy.cfg and, with -o DIR, the map
// files its HTTP frontends read. Without GatewayClasses in the input,
// every class the Gateways name is taken as this controller's. What the
// status would say is not true (a listener or route refused) is a
// warning each.
func (f *renderFlags) runGateway(e *cmdEnv, set objects.Set, refused refusals, outputGiven bool) error {
	in := gateway.Input{Classes: set.GatewayClasses, Gateways: set.Gateways, HTTPRoutes: set.HTTPRoutes, GRPCRoutes: set.GRPCRoutes, Grants: set.ReferenceGrants,
		Services: set.Services, Slices: desired.SlicesOf(set.EndpointSlices)}
	if len(in.Classes) == 0 {
		for _, g := range set.Gateways {
			n := string(g.Spec.GatewayClassName)
			if !slices.ContainsFunc(in.Classes, func(c *gwv1.GatewayClass) bool { return c.Name == n }) {
				in.Classes = append(in.Classes, &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: n},
					Spec: gwv1.GatewayClassSpec{ControllerName: gateway.ControllerName}})
			}
		}
	}
	res := gateway.Compute(in, gateway.Options{})
	warn := func(what string, conds []metav1.Condition) {
		for _, c := range conds {
			if (c.Status == metav1.ConditionFalse) != (c.Type == "Conflicted") {
				fmt.Fprintf(e.stderr, "warning: %s: %s=%s %s: %s\n", what, c.Type, c.Status, c.Reason, c.Message)
			}
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(res.Gateways), func(a, b gateway.Key) int { return strings.Compare(a.String(), b.String()) }) {
		st := res.Gateways[k]
		warn("Gateway "+settings.ShowName(k.String()), st.Conditions)
		for _, l := range st.Listeners {
			warn("Gateway "+settings.ShowName(k.String())+" listener "+settings.ShowName(string(l.Name)), l.Conditions)
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(res.Routes.Map()), func(a, b gateway.RouteKey) int { return strings.Compare(a.String(), b.String()) }) {
		for _, p := range res.Routes.Get(k) {
			warn(k.Kind+" "+settings.ShowName(k.Key.String())+" parent "+settings.ShowName(string(p.ParentRef.Name)), p.Conditions)
		}
	}
	if set.Ingressed() {
		setH, addH := f.headers.keys()
		renderIngresses(&res.Config, set, ingress.Options{ProxySetHeaders: setH, AddHeaders: addH}, e.stderr)
	}
	http := slices.ContainsFunc(res.Config.Frontends, func(fe model.Frontend) bool { return fe.HTTP != nil })
	if http && f.dir == "" {
		return errors.New("render: HTTP listeners read their routes from map files: -o DIR writes them beside haproxy.cfg")
	}
	layout, _ := plan.Assign(res.Config, nil, true)
	ropts := f.renderOptions()
	if f.dir != "" {
		ropts.ACLDir = runtimeapi.ACLDir(filepath.Join(f.dir, renderConfigFile))
	}
	cfg := render.Config(res.Config, layout, ropts)
	var err error
	if f.dir != "" {
		err = f.write(cfg, nil, runtimeapi.PatternFiles(res.Config, ropts), ropts.ACLDir, false, outputGiven, e.stderr)
	} else {
		_, err = e.stdout.Write(cfg)
	}
	if err != nil {
		return err
	}
	return refused.err()
}
