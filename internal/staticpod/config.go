package staticpod

import (
	"net/netip"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// Config renders the proxy's haproxy.cfg from cfg (the apiservers'
// frontend and backend) through the render package, with the monitor
// frontend that the liveness probe asks. The live variant (run not empty)
// adds the admin socket and server-state file the controller uses; its
// slots are laid out as the controller lays them out, so the controller
// takes the seed over without a reload.
func Config(cfg model.Config, monitor netip.AddrPort, run RunDir) []byte {
	opts := render.Options{Monitor: monitor}
	if run != "" {
		opts.StatsSocket, opts.StateFile = run.StatsSocket(), run.StateFile()
	}
	layout, _ := plan.Assign(cfg, nil, true)
	return render.Config(cfg, layout, opts)
}
