package cli

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Concerns the flags of a command are grouped by in its help, in this
// order.
const (
	groupMode      = "Mode and driver"
	groupKube      = "Kubernetes"
	groupServices  = "Services"
	groupDefaults  = "Service defaults (a Service's annotations override them)"
	groupChecks    = "Health checks"
	groupHAProxy   = "HAProxy"
	groupStatsPage = "HAProxy stats page"
	groupDataplane = "Data Plane API"
	groupUDP       = "UDP"
	groupAnnounce  = "Addresses on the wire (--announce)"
	groupAPIServer = "apiserver mode"
	groupIngress   = "Ingresses (--mode=gateway)"
	groupPublish   = "LoadBalancer status and leader election"
	groupObs       = "Observability"
	groupInput     = "Input and output"
	groupImage     = "HAProxy image"
	groupLive      = "Live controller (--live)"
	groupOther     = "Other"
)

var groupOrder = []string{groupInput, groupMode, groupKube, groupServices, groupDefaults, groupChecks, groupHAProxy,
	groupStatsPage, groupDataplane, groupUDP, groupAnnounce, groupAPIServer, groupIngress, groupImage, groupLive, groupPublish, groupObs, groupOther}

// A scope says which mode and driver of `run` use a flag; `run` refuses a
// flag given on its command line outside its scope (an environment
// variable is not refused: one environment may serve several units).
type scope string

const (
	scopeAll       scope = ""
	scopeServices  scope = "services"  // --mode=services
	scopeAPIServer scope = "apiserver" // --mode=apiserver
	scopeLocal     scope = "local"     // a local HAProxy: not the Data Plane API driver
	scopeDataplane scope = "dataplane" // the Data Plane API driver (or an --instance of it)
)

// Annotation keys of a flag's group and scope.
const (
	annGroup = "haproxy-k8s-sync/group"
	annScope = "haproxy-k8s-sync/scope"
)

// addGroup registers flags on fs through register, in group and scope.
func addGroup(fs *pflag.FlagSet, group string, sc scope, register func(*pflag.FlagSet)) {
	g := pflag.NewFlagSet(group, pflag.ContinueOnError)
	register(g)
	g.VisitAll(func(f *pflag.Flag) {
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[annGroup] = []string{group}
		if sc != scopeAll {
			f.Annotations[annScope] = []string{string(sc)}
		}
		fs.AddFlag(f)
	})
}

// flagScope returns the scope of f.
func flagScope(f *pflag.Flag) scope {
	if s := f.Annotations[annScope]; len(s) > 0 {
		return scope(s[0])
	}
	return scopeAll
}

// goValue is a flag.Value (from a package that registers on the standard
// library's flag sets) as a pflag.Value.
type goValue struct {
	flag.Value
	typ string
}

func (v goValue) Type() string { return v.typ }

// registerGoFlags registers on fs the flags that register(gs, arg) puts on
// a standard library flag set.
func registerGoFlags[T any](fs *pflag.FlagSet, register func(*flag.FlagSet, T), arg T) {
	gs := flag.NewFlagSet("", flag.ContinueOnError)
	register(gs, arg)
	gs.VisitAll(func(f *flag.Flag) {
		pf := &pflag.Flag{Name: f.Name, Usage: f.Usage, DefValue: f.DefValue, Value: goValue{f.Value, "string"}}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			pf.Value, pf.NoOptDefVal = goValue{f.Value, "bool"}, "true"
		}
		fs.AddFlag(pf)
	})
}

// givenFlags is the set of flags the command line set (call it before
// applyEnv).
func givenFlags(fs *pflag.FlagSet) map[string]bool {
	given := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { given[f.Name] = true })
	return given
}

// checkScopes refuses the first flag (by name) of given that the mode and
// driver do not use.
func checkScopes(fs *pflag.FlagSet, given map[string]bool, mode string, dataplane, instances bool) error {
	names := make([]string, 0, len(given))
	for n := range given {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		f := fs.Lookup(n)
		if f == nil {
			continue
		}
		var why string
		switch sc := flagScope(f); {
		case sc == scopeAPIServer && mode != modeAPIServer:
			why = "is a flag of --mode=apiserver; --mode=" + mode + " does not use it"
		case sc != scopeAPIServer && sc != scopeAll && sc != scopeLocal && mode == modeAPIServer:
			why = "is a flag of --mode=services; --mode=apiserver does not use it"
		case sc == scopeLocal && dataplane && !instances:
			why = "is a flag of a local HAProxy (--driver=haproxy); the Data Plane API driver does not use it"
		case sc == scopeDataplane && mode == modeServices && !dataplane && !instances:
			why = "is a flag of the Data Plane API driver (--driver=dataplane, --dataplane-url or an --instance with dataplane-url); --driver=haproxy does not use it"
		}
		if why != "" {
			return usageError{msg: fmt.Sprintf("--%s %s", n, why), hint: "See 'haproxy-k8s-sync run --help' for the flags of each mode and driver."}
		}
	}
	return nil
}

// longNames is the set of long flag names of every command under c.
func longNames(sets ...*pflag.FlagSet) map[string]bool {
	names := map[string]bool{"help": true, "version": true}
	for _, fs := range sets {
		fs.VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
	}
	return names
}

// commandFlagSets is the flag set of c and of every command under it.
func commandFlagSets(c *cobra.Command) []*pflag.FlagSet {
	out := []*pflag.FlagSet{c.Flags()}
	for _, sub := range c.Commands() {
		out = append(out, commandFlagSets(sub)...)
	}
	return out
}

// normalizeArgs turns a long flag written with one dash (-haproxy-config,
// as the standard library's flag package took it and older units and
// scripts write it) into its two-dash form, up to a "--". Single letters
// (-f, -o, -h) stay shorthands.
func normalizeArgs(args []string, long map[string]bool) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			if name, _, _ := strings.Cut(a[1:], "="); len(name) > 1 && long[name] {
				a = "-" + a
			}
		}
		out = append(out, a)
	}
	return out
}
