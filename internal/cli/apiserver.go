package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/apiserverlb"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/runtimeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

// Modes of `run`.
const (
	modeServices  = "services"
	modeAPIServer = "apiserver"

	driverAPIServer = "apiserver" // the driver label of this mode's metrics
)

// apiserverFlags are the flags of `run --mode=apiserver` (see
// docs/apiserver.md).
type apiserverFlags struct {
	listen            stringList
	sources           string
	bootstrap         stringList
	port              int
	configMap         string
	stateFile         string
	caFile            string
	certFile, keyFile string
	pemFile           string
	insecure, noCheck bool
	inter             time.Duration
	rise, fall        int
}

func registerAPIServerFlags(fs *pflag.FlagSet) *apiserverFlags {
	a := &apiserverFlags{}
	fs.Var(&a.listen, "listen", "apiserver mode: address the frontend listens on, :PORT or IP:PORT (repeatable; default :6443)")
	fs.StringVar(&a.sources, "apiserver-sources", apiserverlb.DefaultSources, "apiserver mode: where the apiservers come from, in order of preference (endpointslice, nodes, configmap, static); the first non-empty one wins")
	fs.Var(&a.bootstrap, "bootstrap-servers", "apiserver mode: static list HOST:PORT or HOST, comma-separated (source static; served before the cluster answers)")
	fs.IntVar(&a.port, "apiserver-port", 6443, "apiserver mode: port of the apiservers for the nodes source and for entries without one")
	fs.StringVar(&a.configMap, "apiserver-configmap", "", "apiserver mode: NAMESPACE/NAME of the ConfigMap of the configmap source (key servers: HOST:PORT or HOST per line)")
	fs.StringVar(&a.stateFile, "apiserver-state-file", "/var/lib/haproxy-k8s-sync/apiservers.json", "apiserver mode: the last list applied, served after a restart while the API is unreachable")
	fs.StringVar(&a.caFile, "apiserver-ca-file", "", "apiserver mode: CA bundle the /readyz health check verifies the apiservers with")
	fs.BoolVar(&a.insecure, "apiserver-check-insecure-skip-verify", false, "apiserver mode: health check without verifying the apiservers' certificates (verify none)")
	fs.StringVar(&a.certFile, "apiserver-check-cert", "", "apiserver mode: client certificate the health check presents (when anonymous auth is off)")
	fs.StringVar(&a.keyFile, "apiserver-check-key", "", "apiserver mode: key of --apiserver-check-cert")
	fs.StringVar(&a.pemFile, "apiserver-check-pem", "", "apiserver mode: one PEM file holding the client certificate and key the health check presents, named as it is in the config (instead of --apiserver-check-cert and --apiserver-check-key)")
	fs.BoolVar(&a.noCheck, "apiserver-check-disable", false, "apiserver mode: no health checks (not recommended: a dead apiserver gets connections until its lease expires)")
	fs.DurationVar(&a.inter, "apiserver-check-inter", apiserverlb.DefaultInter, "apiserver mode: health check interval")
	fs.IntVar(&a.rise, "apiserver-check-rise", apiserverlb.DefaultRise, "apiserver mode: successful checks before a server is up")
	fs.IntVar(&a.fall, "apiserver-check-fall", apiserverlb.DefaultFall, "apiserver mode: failed checks before a server is down")
	return a
}

// options validates the flags into the loop's options.
func (a *apiserverFlags) options(log *slog.Logger) (apiserverlb.Options, error) {
	var o apiserverlb.Options
	var err error
	if o.Sources, err = apiserverlb.ParseSources(a.sources); err != nil {
		return o, flagErr("--apiserver-sources: %v", err)
	}
	if a.port < 1 || a.port > 65535 {
		return o, flagErr("--apiserver-port: %d out of range", a.port)
	}
	o.Port = uint16(a.port)
	if o.Static, err = apiserverlb.ParseServers(strings.Join(a.bootstrap, "\n"), o.Port); err != nil {
		return o, flagErr("--bootstrap-servers: %v", err)
	}
	if a.configMap != "" {
		ns, name, ok := strings.Cut(a.configMap, "/")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			return o, flagErr("--apiserver-configmap: want NAMESPACE/NAME, got %q", a.configMap)
		}
		o.ConfigMapNamespace, o.ConfigMapName = ns, name
	} else if slices.Contains(o.Sources, apiserverlb.SourceConfigMap) {
		return o, flagErr("--apiserver-sources has configmap: give --apiserver-configmap NAMESPACE/NAME")
	}
	o.StateFile = a.stateFile
	if (a.certFile == "") != (a.keyFile == "") {
		return o, flagErr("--apiserver-check-cert and --apiserver-check-key go together")
	}
	if a.pemFile != "" && a.certFile != "" {
		return o, flagErr("--apiserver-check-pem replaces --apiserver-check-cert and --apiserver-check-key: give one or the other")
	}
	if a.pemFile != "" && !model.ValidFilePath(a.pemFile) {
		return o, flagErr("--apiserver-check-pem: %q: want an absolute path of letters, digits and /-._", a.pemFile)
	}
	if f := missingFile(a.caFile, a.certFile, a.keyFile, a.pemFile); f != "" && !a.noCheck {
		// Before kubeadm init the CA and certificates do not exist yet:
		// serve with TCP checks; a restart once they exist turns
		// GET /readyz on.
		log.Warn("a health-check file does not exist (yet): TCP checks until a restart", "file", f)
		a.caFile, a.certFile, a.keyFile, a.pemFile, a.insecure = "", "", "", "", false
	}
	check := apiserverlb.CheckOptions{Inter: a.inter, Rise: a.rise, Fall: a.fall, CAFile: a.caFile,
		InsecureSkipVerify: a.insecure, Disabled: a.noCheck}
	if a.pemFile != "" && !a.noCheck {
		check.ClientCertPEM = a.pemFile // HAProxy reads it as it is
	}
	if a.certFile != "" && !a.noCheck {
		// HAProxy wants certificate and key in one file: written next to
		// the state file, private.
		check.ClientCertPEM = filepath.Join(filepath.Dir(a.stateFile), "apiserver-check-client.pem")
		if err := apiserverlb.WriteClientPEM(a.certFile, a.keyFile, check.ClientCertPEM); err != nil {
			return o, fmt.Errorf("--apiserver-check-cert: %w", err)
		}
	}
	listen := []string(a.listen)
	if len(listen) == 0 {
		listen = []string{":6443"}
	}
	if o.Shape, err = apiserverlb.NewShape(listen, check); err != nil {
		return o, err
	}
	if a.insecure && !a.noCheck {
		log.Warn("health checks do not verify the apiservers' certificates (--apiserver-check-insecure-skip-verify); give --apiserver-ca-file instead")
	}
	if a.caFile == "" && !a.insecure && !a.noCheck {
		log.Warn("no --apiserver-ca-file: health checks are TCP connects, not GET /readyz (give the apiservers' CA, or --apiserver-check-insecure-skip-verify)")
	}
	if a.noCheck {
		log.Warn("health checks are off (--apiserver-check-disable): a dead apiserver gets connections until its lease expires")
	}
	return o, nil
}

// runAPIServer is `run --mode=apiserver`: the same HAProxy driver as the
// Service mode, fed by the apiserver loop.
func runAPIServer(ctx context.Context, f *runFlags, a *apiserverFlags, log *slog.Logger) error {
	if f.apply != runtimeapi.ModeHybrid && f.apply != runtimeapi.ModeReload {
		return flagErr("--apply: want hybrid or reload, got %q", f.apply)
	}
	opts, err := a.options(log)
	if err != nil {
		return err
	}
	opts.ResyncPeriod = f.resync
	opts.Logger = log
	// As in the other modes: the informers relist as soon as the
	// apiserver answers again after an outage (source/relist.go).
	opts.Outage = source.NewOutage()
	connect := func(ctx context.Context) (kubernetes.Interface, error) {
		_, client, err := watchedClient(f.kube, opts.Outage)
		if err != nil {
			return nil, err
		}
		// /version answers any client, authenticated or not: the API is up.
		if err := client.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
			return nil, err
		}
		return client, nil
	}
	drv, stop, err := f.single(log)
	if err != nil {
		return err
	}
	defer stop()
	// The registry first: the loop's workqueue takes its metrics when
	// it is created.
	opts.Metrics = f.metrics.instance(driverAPIServer)
	loop := apiserverlb.New(drv, connect, opts)
	// Ready once HAProxy has a list to serve, whether or not the API
	// answers: serving the bootstrap or kept list before the cluster
	// exists is this mode's job (docs/apiserver.md).
	ready := &readiness{synced: loop.Known, notSynced: "no apiserver known yet", inst: opts.Metrics, socket: f.stats}
	if err := f.metrics.serve(ctx, ready.ready, log); err != nil {
		return err
	}
	go f.statsPage.watch(ctx, 2*time.Second, drv, loop.Trigger, log)
	go drv.Watch(ctx, time.Second, loop.Trigger)
	for flag, path := range map[string]string{"--state-file": f.stateFile, "--apiserver-state-file": a.stateFile} {
		if err := ensureDir(path, flag); err != nil {
			return err
		}
	}
	log.Info("starting", "version", Version, "mode", modeAPIServer, "sources", opts.Sources, "listen", []string(a.listen),
		"bootstrap", apiserverlb.FormatServers(opts.Static), "config", f.config)
	return loop.Run(ctx)
}

// missingFile returns the first of the given paths (empty ones skipped)
// that does not exist.
func missingFile(paths ...string) string {
	for _, p := range paths {
		if _, err := os.Stat(p); p != "" && errors.Is(err, fs.ErrNotExist) {
			return p
		}
	}
	return ""
}
