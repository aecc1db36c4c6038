package cli

import (
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"time"

	"github.com/spf13/pflag"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/runtimeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/kubeclient"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
)

// runFlags are the flags of `run`, in both modes.
type runFlags struct {
	shape
	kube                 kubeclient.Options
	config, bin, master  string
	apply                string
	resync, minReload    time.Duration
	reloadSettle         time.Duration
	persist, syncTimeout time.Duration
	persistMax           time.Duration
	logLevel, logFormat  string
	pprof                string
	memLimit             string // gc.go
	publish              publishFlags
	instances            instanceList
	metrics              metricsFlags
	statsPage            statsFlags
	dp                   dataplaneFlags
	mode                 string
	udp                  udpFlags
	announce             announceFlags
	pool                 poolFlags
	api                  *apiserverFlags
	ingress              ingressFlags
	// onApplied, when set, is told that an --instance applied a model
	// (the gateway mode publishes status once all did).
	onApplied func(instance string, cfg model.Config)
	// binChecked: --haproxy-bin passed checkHAProxy (haproxybin.go).
	binChecked bool
	// binVersion: --haproxy-bin's version, once checked: what the config
	// may use (a connect timeout per request: ConnectPerRequest).
	binVersion haproxy.Version
	// poolPolicy: the pool of ready backends --backend-pool* ask for
	// (pool.go), checked by run; none in the apiserver mode.
	poolPolicy spares.Policy
}

// register registers run's flags on fs, grouped by concern; getenv feeds
// the Service defaults (see shape.register).
func (f *runFlags) register(fs *pflag.FlagSet, getenv func(string) string) {
	addGroup(fs, groupMode, scopeAll, func(fs *pflag.FlagSet) {
		fs.StringVar(&f.mode, "mode", modeServices, "services: load-balance Services; apiserver: load-balance the kube-apiservers (docs/apiserver.md); gateway: serve Gateway API TCP, TLS and UDP routes (docs/gateway.md)")
	})
	f.dp.register(fs)
	addGroup(fs, groupMode, scopeServices, func(fs *pflag.FlagSet) {
		fs.Var(&f.instances, "instance", "several HAProxy instances, each reconciled on its own: name=NAME,config=PATH,master=PATH,stats=PATH,state=PATH[,stats-page=[IP]:PORT] (a local HAProxy; replaces --haproxy-config, --master-socket, --stats-socket, --state-file) or name=NAME,dataplane-url=URL[,username=U][,password-file=PATH][,token-file=PATH] (a Data Plane API); repeatable")
	})
	addGroup(fs, groupKube, scopeAll, func(fs *pflag.FlagSet) {
		fs.StringVar(&f.kube.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster, then $KUBECONFIG)")
		fs.StringVar(&f.kube.APIServer, "api-server", "", "kube-apiserver URL (with --token-file for hosts outside the cluster)")
		fs.StringVar(&f.kube.TokenFile, "token-file", "", "file holding a bearer token (re-read when it changes)")
		fs.StringVar(&f.kube.CAFile, "ca-file", "", "CA bundle of the kube-apiserver's serving certificate")
		fs.DurationVar(&f.resync, "resync-period", 30*time.Second, "compare HAProxy's state with what was applied this often (off the pass lock) and correct drift")
	})
	addGroup(fs, groupKube, scopeServices, func(fs *pflag.FlagSet) {
		fs.DurationVar(&f.syncTimeout, "cache-sync-timeout", 5*time.Minute, "give up if the informer caches have not synced by then")
	})
	f.shape.registerServices(fs)
	f.shape.registerDefaults(fs, getenv)
	addGroup(fs, groupChecks, scopeServices, f.shape.nodeCheck.register)
	addGroup(fs, groupHAProxy, scopeLocal, func(fs *pflag.FlagSet) {
		fs.StringVar(&f.config, "haproxy-config", "/etc/haproxy/haproxy.cfg", "haproxy.cfg this controller owns")
		fs.StringVar(&f.bin, "haproxy-bin", "haproxy", "haproxy binary, used to check configs")
		fs.StringVar(&f.master, "master-socket", "/run/haproxy-k8s-sync/master.sock", "HAProxy master CLI socket (haproxy -W -S PATH)")
		fs.StringVar(&f.apply, "apply", runtimeapi.ModeHybrid, "hybrid: servers through the Runtime API, reload only for structure; reload: reload on every change (baseline)")
		fs.DurationVar(&f.minReload, "min-reload-interval", 500*time.Millisecond, "structural changes arriving closer than this share one reload")
		fs.DurationVar(&f.reloadSettle, "reload-settle", 300*time.Millisecond, "a reload wanted after a quiet spell waits this long, so that changes written together (a new Service and its EndpointSlices) share it; server changes never wait")
		fs.DurationVar(&f.persist, "persist-interval", time.Second, "write the config and server-state files once changes have been quiet this long")
		fs.DurationVar(&f.persistMax, "persist-max-delay", 30*time.Second, "write the config and server-state files at the latest this long after the first change not yet written, even while changes keep coming")
	})
	addGroup(fs, groupHAProxy, scopeLocal, f.pool.register)
	f.shape.registerHAProxy(fs)
	addGroup(fs, groupHAProxy, scopeLocal, f.shape.listeners.registerRun)
	addGroup(fs, groupStatsPage, scopeLocal, f.statsPage.register)
	addGroup(fs, groupUDP, scopeServices, f.udp.register)
	addGroup(fs, groupAnnounce, scopeServices, f.announce.register)
	addGroup(fs, groupAPIServer, scopeAPIServer, func(fs *pflag.FlagSet) { f.api = registerAPIServerFlags(fs) })
	addGroup(fs, groupIngress, scopeAll, f.ingress.register)
	addGroup(fs, groupPublish, scopeServices, f.publish.register)
	addGroup(fs, groupObs, scopeAll, func(fs *pflag.FlagSet) {
		fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
		fs.StringVar(&f.logFormat, "log-format", "text", "text or json")
		f.metrics.register(fs)
		fs.StringVar(&f.pprof, "pprof-address", "", "serve Go profiles (net/http/pprof) on this address, e.g. 127.0.0.1:6060; off when empty")
		fs.StringVar(&f.memLimit, "memory-limit", "auto", "Go's soft memory limit (e.g. 140Mi, below the container's limit): near it the collector runs more often and memory goes back to the system; auto (Services mode): one that follows the cluster's size, never above GOMEMLIMIT (off: none); 0: GOMEMLIMIT's alone")
	})
}
