package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// instanceSpec is one --instance: a local HAProxy of its own.
type instanceSpec struct {
	name, config, master, stats, state string
}

// instanceList is the repeatable --instance flag:
// name=NAME,config=PATH,master=PATH,stats=PATH,state=PATH.
type instanceList []instanceSpec

func (l *instanceList) String() string {
	var out []string
	for _, s := range *l {
		out = append(out, s.name)
	}
	return strings.Join(out, ";")
}

func (l *instanceList) Set(v string) error {
	s := instanceSpec{name: fmt.Sprintf("i%d", len(*l)+1)}
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || val == "" {
			return fmt.Errorf("want KEY=VALUE, got %q", kv)
		}
		switch k {
		case "name":
			s.name = val
		case "config":
			s.config = val
		case "master":
			s.master = val
		case "stats":
			s.stats = val
		case "state":
			s.state = val
		default:
			return fmt.Errorf("unknown key %q (want name, config, master, stats, state)", k)
		}
	}
	if s.config == "" || s.master == "" || s.stats == "" || s.state == "" {
		return fmt.Errorf("%q: config, master, stats and state are required", v)
	}
	for _, o := range *l {
		if o.name == s.name {
			return fmt.Errorf("instance name %q given twice", s.name)
		}
	}
	*l = append(*l, s)
	return nil
}

// driverInstances is the "driver" label of the controller's own passes
// with --instance: they only hand the model to the instances, each of
// which reports its attempts under instanceMetricsName.
const driverInstances = "instances"

// instanceMetricsName is the "driver" label of one --instance: its kind
// and its name (haproxy/a), so each instance has its own series.
func instanceMetricsName(kind, name string) string { return kind + "/" + name }

// instancesDriver builds one HAProxy driver per --instance behind a
// driver.Instances: each is reconciled on its own (own worker, retries and
// backoff). It returns the driver and the watch of every instance's
// worker PID.
func (f *runFlags) instancesDriver(ctx context.Context, ropts render.Options, log *slog.Logger) (driver.Driver, func(context.Context, time.Duration, func()), func()) {
	var insts []driver.Instance
	var hds []*driver.HAProxy
	for _, s := range f.instances {
		ro := ropts
		ro.StatsSocket, ro.StateFile = s.stats, s.state
		hd := driver.NewHAProxy(driver.Options{
			ConfigPath: s.config, Binary: f.bin, MasterSocket: s.master, Render: ro,
			Mode: f.apply, MinReloadInterval: f.minReload, Logger: log.With("instance", s.name),
		})
		go hd.Run(ctx, f.persist, f.persistMax)
		rec := f.metrics.instance(instanceMetricsName(driverHAProxy, s.name))
		insts = append(insts, driver.Instance{Name: s.name, Driver: hd, Drift: rec.Drift,
			Observe: func(cfg model.Config, res driver.Result, err error, took time.Duration) {
				rec.Applied(cfg, res, err, 0, took)
			}})
		hds = append(hds, hd)
	}
	m := driver.NewInstances(insts, log)
	go m.Run(ctx)
	watch := func(ctx context.Context, every time.Duration, trigger func()) {
		for _, hd := range hds {
			go hd.Watch(ctx, every, trigger)
		}
	}
	closeAll := func() {
		for _, hd := range hds {
			hd.Close()
		}
	}
	return m, watch, closeAll
}
