// Package leader elects one replica among controllers (client-go
// leaderelection on a coordination.k8s.io Lease) for the writes that must
// happen once per cluster: LoadBalancer status and Events. Every replica
// keeps driving its own HAProxy whether or not it leads.
package leader

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Options configure the election.
type Options struct {
	Namespace, Name string // the Lease
	Identity        string // default hostname_random
	LeaseDuration   time.Duration
	RenewDeadline   time.Duration
	RetryPeriod     time.Duration
	Logger          *slog.Logger
}

// Gate says whether this replica may do the leader's work now. The zero
// value is closed; Always is open for good (no election).
type Gate struct{ open atomic.Bool }

// Always returns an open gate: a single replica, no election.
func Always() *Gate {
	g := &Gate{}
	g.open.Store(true)
	return g
}

// Leading reports whether the gate is open.
func (g *Gate) Leading() bool { return g.open.Load() }

// Run campaigns until ctx ends. While it leads, the gate is open and lead
// runs with a context that ends when leadership is lost; then it campaigns
// again. The Lease is released when ctx ends, so another replica takes
// over within RetryPeriod instead of LeaseDuration.
func Run(ctx context.Context, client kubernetes.Interface, g *Gate, opts Options, lead func(context.Context)) error {
	if opts.Identity == "" {
		host, _ := os.Hostname()
		opts.Identity = host + "_" + string(uuid.NewUUID())
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: opts.Namespace, Name: opts.Name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: opts.Identity},
	}
	cfg := leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   opts.LeaseDuration,
		RenewDeadline:   opts.RenewDeadline,
		RetryPeriod:     opts.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            opts.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				g.open.Store(true)
				opts.Logger.Info("leading: writing LoadBalancer status and Events", "lease", opts.Namespace+"/"+opts.Name, "identity", opts.Identity)
				lead(lctx)
			},
			OnStoppedLeading: func() {
				g.open.Store(false)
				opts.Logger.Info("not leading: another replica writes status and Events", "lease", opts.Namespace+"/"+opts.Name)
			},
			OnNewLeader: func(id string) {
				if id != opts.Identity {
					opts.Logger.Info("leader elected", "leader", id)
				}
			},
		},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(cfg)
		if err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
		le.Run(ctx)
	}
	return nil
}

// InClusterNamespace is the namespace of the Pod this runs in, or "" outside
// a cluster.
func InClusterNamespace() string {
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return string(b)
}
