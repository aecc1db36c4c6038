package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// instanceSpec is one --instance: a local HAProxy of its own (config,
// master, stats, state), or a Data Plane API (dataplane-url, with its own
// credentials or the --dataplane-* ones).
type instanceSpec struct {
	name, config, master, stats, state string
	statsPage                          string      // [IP]:PORT of its stats page, "" for none
	page                               *statsFlags // statsPage resolved by check
	dp                                 dpTarget    // dp.url set: a Data Plane API
}

// instanceList is the repeatable --instance flag:
// name=NAME,config=PATH,master=PATH,stats=PATH,state=PATH[,stats-page=ADDR] or
// name=NAME,dataplane-url=URL[,username=U][,password-file=PATH][,token-file=PATH].
type instanceList []instanceSpec

func (l *instanceList) String() string {
	var out []string
	for _, s := range *l {
		out = append(out, s.name)
	}
	return strings.Join(out, ";")
}

func (l *instanceList) Type() string { return "spec" }

func (l *instanceList) Set(v string) error {
	s := instanceSpec{name: fmt.Sprintf("i%d", len(*l)+1)}
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || val == "" {
			return fmt.Errorf("want KEY=VALUE, got a %q without a value", k)
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
		case "stats-page":
			s.statsPage = val
		case "dataplane-url":
			s.dp.url = val
		case "username":
			s.dp.user = val
		case "password-file":
			s.dp.passwordFile = val
		case "token-file":
			s.dp.tokenFile = val
		default:
			return fmt.Errorf("unknown key %q (want name, config, master, stats, state, stats-page; or name, dataplane-url, username, password-file, token-file)", k)
		}
	}
	files := s.config != "" || s.master != "" || s.stats != "" || s.state != "" || s.statsPage != ""
	creds := s.dp.user != "" || s.dp.passwordFile != "" || s.dp.tokenFile != ""
	switch {
	case s.dp.url != "" && files:
		return fmt.Errorf("instance %q: a Data Plane API instance (dataplane-url) takes no config, master, stats, state or stats-page", s.name)
	case s.dp.url == "" && creds:
		return fmt.Errorf("instance %q: username, password-file and token-file are for a Data Plane API instance (dataplane-url)", s.name)
	case s.dp.url == "" && (s.config == "" || s.master == "" || s.stats == "" || s.state == ""):
		return fmt.Errorf("instance %q: config, master, stats and state are required (or dataplane-url)", s.name)
	case strings.Contains(s.name, "/"):
		return fmt.Errorf("instance %q: a name without /", s.name)
	}
	for _, f := range []struct {
		key, path string
		socket    bool
	}{{"stats", s.stats, true}, {"state", s.state, false}} { // written into its config
		if err := checkConfigPath(f.path, f.socket); err != nil {
			return fmt.Errorf("instance %q: %s=%w", s.name, f.key, err)
		}
	}
	for _, o := range *l {
		if o.name == s.name {
			return fmt.Errorf("instance name %q given twice", s.name)
		}
		if s.statsPage != "" && o.statsPage == s.statsPage {
			return fmt.Errorf("instances %q and %q: the same stats-page %s", o.name, s.name, s.statsPage)
		}
	}
	*l = append(*l, s)
	return nil
}

// check rejects what --instance does not combine with: a Data Plane API
// given by --dataplane-url or --driver (give it as an instance), and the
// shared stats page address (one address cannot serve several HAProxy's
// pages: each instance names its own, stats-page=). It resolves each
// instance's stats page with the shared --stats-auth-file and
// --stats-public, before anything starts.
func (l instanceList) check(useDataplane bool, shared statsFlags, ropts render.Options, log *slog.Logger) error {
	if len(l) == 0 {
		return nil
	}
	if useDataplane {
		return flagErr("--instance with --dataplane-url or --driver=dataplane: give the Data Plane API as an instance, --instance name=NAME,dataplane-url=URL (the other --dataplane-* flags apply to it)")
	}
	if shared.addr != "" {
		return flagErr("--stats-address with --instance: every HAProxy would bind the same address; give each instance its own, --instance ...,stats-page=[IP]:PORT (--stats-auth-file and --stats-public apply to every instance)")
	}
	if shared.authFile != "" && !slices.ContainsFunc(l, func(s instanceSpec) bool { return s.statsPage != "" }) {
		return flagErr("--stats-auth-file with --instance needs an instance with a stats-page")
	}
	for i, s := range l {
		if s.statsPage == "" {
			continue
		}
		page := shared
		page.addr = s.statsPage
		if err := page.resolve(&ropts, log.With("instance", s.name)); err != nil {
			return flagErr("--instance %s: stats-page: %v", s.name, err)
		}
		l[i].page = &page
	}
	return nil
}

// kind is the kind of driver of the instance (driverCaps).
func (s instanceSpec) kind() string {
	if s.dp.url != "" {
		return driverDataplane
	}
	return driverHAProxy
}

// driverInstances is the "driver" label of the controller's own passes
// with --instance: they only hand the model to the instances, each of
// which reports its attempts under instanceMetricsName.
const driverInstances = "instances"

// instanceMetricsName is the "driver" label of one --instance: its kind
// and its name (haproxy/a), so each instance has its own series.
func instanceMetricsName(kind, name string) string { return kind + "/" + name }

// builtInstances is what buildInstances built, for /readyz.
type builtInstances struct {
	names []string
	ready []*readiness // of each instance, in names' order
}

// readyFunc is /readyz with --instance: the informer caches have synced,
// and every instance is ready by the rule of a single HAProxy (its last
// attempt applied or deferred, else it answers: its admin socket, or the
// Data Plane API). The instances are probed side by side; the error names
// each one that is not ready.
func (b *builtInstances) readyFunc(synced func() bool) func(context.Context) error {
	return func(ctx context.Context) error {
		if !synced() {
			return errors.New("informer caches not synced")
		}
		errs := make([]error, len(b.ready))
		var wg sync.WaitGroup
		for i, r := range b.ready {
			wg.Go(func() {
				if err := r.ready(ctx); err != nil {
					errs[i] = fmt.Errorf("instance %s: %w", b.names[i], err)
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
}
