package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
)

func TestInstanceFlag(t *testing.T) {
	local := "config=/c,master=/m,stats=/s,state=/st"
	for _, tc := range []struct {
		name        string
		values      []string
		errContains string
		dataplane   bool
	}{
		{name: "two local HAProxy", values: []string{"name=a," + local, "name=b," + local}},
		{name: "a Data Plane API among them", values: []string{"name=a," + local, "name=c,dataplane-url=http://127.88.0.1:5555"}, dataplane: true},
		{name: "own credentials", values: []string{"name=c,dataplane-url=http://127.88.0.1:5555,username=u,password-file=/pw"}, dataplane: true},
		{name: "a local HAProxy needs its files", values: []string{"name=a,config=/c"}, errContains: "config, master, stats and state are required"},
		{name: "an API takes no files", values: []string{"name=c,dataplane-url=http://h,config=/c"}, errContains: "takes no config"},
		{name: "credentials only for an API", values: []string{"name=a,token-file=/t," + local}, errContains: "are for a Data Plane API instance"},
		{name: "own stats pages", values: []string{"name=a,stats-page=127.88.0.1:8404," + local, "name=b,stats-page=127.88.0.2:8404," + local}},
		{name: "one stats page twice", values: []string{"name=a,stats-page=127.88.0.1:8404," + local, "name=b,stats-page=127.88.0.1:8404," + local}, errContains: "the same stats-page"},
		{name: "an API has no stats page here", values: []string{"name=c,dataplane-url=http://h,stats-page=127.88.0.1:8404"}, errContains: "takes no config"},
		{name: "name twice", values: []string{"name=a," + local, "name=a," + local}, errContains: "given twice"},
		{name: "a name with a slash", values: []string{"name=a/b," + local}, errContains: "without /"},
		{name: "unknown key", values: []string{"name=a,socket=/x"}, errContains: `unknown key "socket"`},
		{name: "no value", values: []string{"name=a,config"}, errContains: "without a value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l instanceList
			var err error
			for _, v := range tc.values {
				if err = l.Set(v); err != nil {
					break
				}
			}
			switch {
			case tc.errContains == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.errContains != "" && (err == nil || !strings.Contains(err.Error(), tc.errContains)):
				t.Fatalf("error %v, want one containing %q", err, tc.errContains)
			case err == nil && slices.ContainsFunc(l, func(s instanceSpec) bool { return s.kind() == driverDataplane }) != tc.dataplane:
				t.Errorf("a Data Plane API instance: %v, want %v", !tc.dataplane, tc.dataplane)
			}
		})
	}
}

// What --instance does not combine with is refused at start, before
// anything connects anywhere.
func TestInstanceRejectedCombinations(t *testing.T) {
	inst := "--instance=name=a,config=/c,master=/m,stats=/s,state=/st"
	for _, tc := range []struct {
		args        []string
		errContains string
	}{
		{[]string{inst, "--stats-address", "127.88.0.1:8404"}, "give each instance its own, --instance ...,stats-page="},
		{[]string{inst, "--stats-auth-file", "/nonexistent"}, "needs an instance with a stats-page"},
		{[]string{inst + ",stats-page=192.0.2.1:8404"}, "is not a loopback address"},
		{[]string{inst, "--dataplane-url", "http://127.88.0.1:5555"}, "give the Data Plane API as an instance"},
		{[]string{inst, "--driver", "dataplane", "--dataplane-url", "http://127.88.0.1:5555"}, "give the Data Plane API as an instance"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // nothing may run: the flags are refused first
		err := Run(ctx, append(tc.args, "--metrics-address", ""), func(string) string { return "" }, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.errContains) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.errContains)
		}
	}
}

// /readyz with --instance: the caches first, then every instance by the
// single-HAProxy rule; the error names the instances that are not ready.
func TestInstancesReadiness(t *testing.T) {
	reg := metrics.New(metrics.Options{})
	noSocket := filepath.Join(t.TempDir(), "admin.sock")
	yes := func() bool { return true }
	inst := func(name, outcome string) *readiness {
		rec := reg.Instance(name)
		rec.Pass(outcome, time.Millisecond)
		return &readiness{synced: yes, inst: rec, socket: noSocket}
	}
	for _, tc := range []struct {
		name     string
		synced   bool
		outcomes []string // of instances a, b
		want     []string // parts of the error; none: ready
		notWant  string
	}{
		{"caches not synced", false, []string{metrics.OutcomeApplied, metrics.OutcomeApplied}, []string{"informer caches not synced"}, ""},
		{"every instance applied", true, []string{metrics.OutcomeApplied, metrics.OutcomeDeferred}, nil, ""},
		{"b failed and is unreachable", true, []string{metrics.OutcomeApplied, metrics.OutcomeError}, []string{"instance b", "HAProxy is unreachable"}, "instance a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &builtInstances{names: []string{"a", "b"}, ready: []*readiness{
				inst(strings.ReplaceAll(tc.name, " ", "_")+"_a", tc.outcomes[0]),
				inst(strings.ReplaceAll(tc.name, " ", "_")+"_b", tc.outcomes[1]),
			}}
			err := b.readyFunc(func() bool { return tc.synced })(context.Background())
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("not ready: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ready, want an error containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if tc.notWant != "" && strings.Contains(err.Error(), tc.notWant) {
				t.Errorf("error %q names %q", err, tc.notWant)
			}
		})
	}
}
