package runtimeapi

import (
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// A renewal cut short by a restart of the controller (renew.go) is found
// in what HAProxy reports: twins (plan.TwinName) beside the slots. When
// every slot the running config file has is there, s1, s2, ... in order,
// the next pass ends the renewal at runtime (plan.Settle: each slot
// serves again as its twin did, the twins go), with no reload; the CA
// files are set again after a restart anyway, which renews the servers
// afresh. A backend caught with slots missing (deleted and not yet
// created again) is left to a reload, as a foreign one.

// adoptTwins records the twins of the backends of rt whose slots are all
// there (d.leftTwins, ended by the next pass: settleTwins), and returns
// foreign with the others added, taken out of rt.
func (d *HAProxy) adoptTwins(rt plan.Runtime, twins plan.Twins, foreign []string) []string {
	d.leftTwins = nil
	if len(twins) == 0 {
		return foreign
	}
	slots := configSlots(d.opts.ConfigPath, d.hash)
	for _, be := range slices.Sorted(maps.Keys(twins)) {
		if n, ok := slots[be]; !ok || n != len(rt[be]) {
			delete(rt, be)
			foreign = append(foreign, be)
			continue
		}
		if d.leftTwins == nil {
			d.leftTwins = plan.Twins{}
		}
		d.leftTwins[be] = twins[be]
		d.log.Info("a renewal of servers was cut short; ending it", "backend", be, "twins", len(twins[be]))
	}
	return foreign
}

// settleTwins starts, for each backend whose twins were found by a read
// back (adoptTwins), the renewal that ends the one cut short. Under d.mu,
// with the model of the pass.
func (d *HAProxy) settleTwins(cfg model.Config) {
	if len(d.leftTwins) == 0 {
		return
	}
	for _, be := range cfg.Backends {
		twins, ok := d.leftTwins[be.Name]
		if !ok || len(d.actual[be.Name]) == 0 {
			continue
		}
		if d.renewals == nil {
			d.renewals = map[string]*renewal{}
		}
		d.renewals[be.Name] = &renewal{
			phases: plan.Settle(be.Name, slices.Clone(d.actual[be.Name]), twins, be.Check.Enabled),
			opts:   strings.Join(render.RenewOptions(be, d.opts.Render), " "),
			check:  be.Check.Enabled,
		}
	}
	d.leftTwins = nil
}

// configSlots counts the server lines of each backend of the config file
// at path, if it is the one HAProxy runs (its description carries hash);
// nil otherwise.
func configSlots(path, hash string) map[string]int {
	if hash == "" || hash == foreignHash {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]int{}
	matches := false
	err = render.ScanConfig(f, func(section, be string, fields []string) {
		switch {
		case len(fields) == 2 && fields[0] == "description":
			matches = fields[1] == render.DescriptionPrefix+hash
		case section == "backend" && len(fields) >= 3 && fields[0] == "server":
			if _, ok := plan.SlotIndex(fields[1]); ok {
				out[be]++
			}
		}
	})
	if err != nil || !matches {
		return nil
	}
	return out
}
