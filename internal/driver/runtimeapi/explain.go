package runtimeapi

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// explainLimit bounds the binds a failed reload's reason lists.
const explainLimit = 5

// explainFailed gives a failed reload that the master did not explain
// (2.6 answers nothing, and with `quiet` its [ALERT] lines go nowhere) a
// reason, while the file that failed is still on disk: what `haproxy -c`
// says against it, else the binds it adds to the running config, the
// start-time step -c does not try. It runs only after a failure, never on
// the normal path; bounded by ctx (the reload's timeout).
func (d *HAProxy) explainFailed(ctx context.Context, cfg model.Config, err error) {
	var re *haproxy.ReloadError
	if !errors.As(err, &re) || re.Answered || re.Reason != "" || d.opts.Binary == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.ReloadTimeout)
	defer cancel()
	alerts, cerr := haproxy.Explain(ctx, d.opts.Binary, d.opts.ConfigPath)
	switch {
	case cerr != nil:
		d.log.Warn("could not check the config of the failed reload", "err", cerr)
	case alerts != "":
		re.Reason = "haproxy -c: " + alerts
	default:
		re.Reason = "haproxy -c accepts the file, so the start failed (" + newBinds(d.running, cfg) + ")"
	}
}

// newBinds names the binds of cfg that running does not have ("frontend
// addr:port"), at most explainLimit of them, the ones a start is the
// first to try.
func newBinds(running, cfg model.Config) string {
	had := make(map[model.Bind]bool)
	for _, f := range running.Frontends {
		for _, b := range f.Binds {
			had[b] = true
		}
	}
	var names []string
	more := 0
	for _, f := range cfg.Frontends {
		for _, b := range f.Binds {
			switch {
			case had[b]:
			case len(names) < explainLimit:
				names = append(names, f.Name+" "+netip.AddrPortFrom(b.Addr, b.Port).String())
			default:
				more++
			}
		}
	}
	if len(names) == 0 {
		return "no bind new in this reload: the open-file limit, a certificate or a file it reads"
	}
	s := "binds new in this reload: " + strings.Join(names, ", ")
	if more > 0 {
		s += " and " + strconv.Itoa(more) + " more"
	}
	return s
}
