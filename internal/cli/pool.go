package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
)

// poolFlags size the pool of ready backends of a local HAProxy
// (internal/spares, docs/reloads.md): spare backends rendered ahead of
// need, so that a new backend is served with no reload.
type poolFlags struct {
	spares, other, lowWater int
	// sparesGiven: --backend-pool was given (flag or environment), else
	// its default follows the listeners (forListeners).
	sparesGiven bool
}

// DefaultListenerPool is --backend-pool's default with the fixed
// listener (--listeners=tproxy, or auto where it chose tproxy): without a
// pool every new Service there would still be a reload.
const DefaultListenerPool = 16

// poolSize is --backend-pool: an int that remembers it was set.
type poolSize struct{ p *poolFlags }

func (v poolSize) String() string { return strconv.Itoa(v.p.spares) }
func (v poolSize) Type() string   { return "int" }
func (v poolSize) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want a number, got %s", strconv.Quote(s))
	}
	v.p.spares, v.p.sparesGiven = n, true
	return nil
}

func (p *poolFlags) register(fs *pflag.FlagSet) {
	fs.Var(poolSize{p}, "backend-pool", fmt.Sprintf("keep this many spare backends ready for the settings most Services share, so that a new backend (a Gateway route's, or with fixed listeners a Service's) is served with no reload; 0: no pool, every backend is rendered under its own name; default %d with the fixed listener (--listeners=tproxy, or auto choosing it), 0 with a frontend per port", DefaultListenerPool))
	fs.IntVar(&p.other, "backend-pool-other", 1, "with --backend-pool: spare backends kept for each other combination of backend settings in use")
	fs.IntVar(&p.lowWater, "backend-pool-low-water", 1, "with --backend-pool: grow the pool (one reload, held back by --reload-settle and --min-reload-interval) when a combination has fewer free spares than this")
}

// forListeners gives --backend-pool, when it was not given, its default
// for the listener mode (render.ListenersTProxy or ports, auto resolved).
func (p *poolFlags) forListeners(mode string) {
	if !p.sparesGiven {
		p.spares = 0
		if mode == render.ListenersTProxy {
			p.spares = DefaultListenerPool
		}
	}
}

// policy is the pool the flags ask for, or a usage error.
func (p poolFlags) policy() (spares.Policy, error) {
	const most = 100000
	for _, v := range []struct {
		name string
		n    int
	}{{"--backend-pool", p.spares}, {"--backend-pool-other", p.other}, {"--backend-pool-low-water", p.lowWater}} {
		if v.n < 0 || v.n > most {
			return spares.Policy{}, flagErr("%s: want 0 to %d, got %d", v.name, most, v.n)
		}
	}
	if p.spares > 0 && p.lowWater > p.spares {
		return spares.Policy{}, flagErr("--backend-pool-low-water: %d is more than --backend-pool (%d)", p.lowWater, p.spares)
	}
	return spares.Policy{Spares: p.spares, Other: p.other, LowWater: p.lowWater}, nil
}

// view is cfg as a controller with this pool, starting with none on disk,
// renders it at its first sync (render --backend-pool): every backend in a
// spare, the free spares of each class. A running controller's numbering
// follows its pool.json instead. Behind the fixed listener (listened not
// nil) restricted Services take spares that check sources, as run's do.
func (p poolFlags) view(cfg model.Config, listened func(model.Frontend) bool) (model.Config, error) {
	pol, err := p.policy()
	if err != nil || !pol.On() {
		return cfg, err
	}
	var marks spares.SourceMarks
	cfg, pol = marks.Behind(cfg, nil, pol, listened)
	occ, waiting := spares.Occupy(spares.State{}, cfg)
	grown, _ := spares.Grow(occ, cfg, waiting, pol)
	return spares.View(grown, cfg), nil
}
