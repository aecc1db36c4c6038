package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/status"
)

// errUnhealthy makes `status` exit non-zero when something is down or
// HAProxy does not run the file's structure.
var errUnhealthy = errors.New("status: a server is down, a backend has no server up, or HAProxy does not run the configuration (see docs/observability.md)")

func newStatusCmd(e *cmdEnv) *cobra.Command {
	var s shape
	var cfgPath, output string
	var dp dataplaneFlags
	c := &cobra.Command{
		Use:   "status [-o table|json]",
		Short: "Show what the running HAProxy serves per Service port",
		Long: `Status shows what the running HAProxy serves per Service port: its servers and their states,
read from the admin socket (or the Data Plane API with --dataplane-url), against the
haproxy.cfg the controller owns. It exits 1 when a server is down, a backend has no server
up, or HAProxy does not run the configuration (see docs/observability.md).`,
		Example: `  haproxy-k8s-sync status
  haproxy-k8s-sync status -o json --stats-socket /run/haproxy-k8s-sync/admin.sock`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := finishFlags(c.Flags(), e.getenv, &s); err != nil {
				return err
			}
			return runStatus(c.Context(), &s, &dp, cfgPath, output, e)
		},
	}
	fs := c.Flags()
	addGroup(fs, groupInput, scopeAll, func(fs *pflag.FlagSet) {
		fs.StringVarP(&output, "output", "o", "table", "output: table or json")
	})
	addGroup(fs, groupHAProxy, scopeAll, func(fs *pflag.FlagSet) {
		fs.StringVar(&cfgPath, "haproxy-config", "/etc/haproxy/haproxy.cfg", "haproxy.cfg the controller owns")
	})
	addGroup(fs, groupDataplane, scopeAll, dp.registerAPI)
	s.register(fs, e.getenv)
	return c
}

// runStatus prints what the running HAProxy serves per Service port.
func runStatus(ctx context.Context, s *shape, dp *dataplaneFlags, cfgPath, output string, e *cmdEnv) error {
	if output != "table" && output != "json" {
		return fmt.Errorf("-o: want table or json, got %q", output)
	}
	var rep status.Report
	var err error
	if dp.url != "" {
		rep, err = dataplaneStatus(ctx, dp, s, e.getenv, e.stderr)
	} else {
		rep, err = status.Collect(ctx, cfgPath, s.stats)
	}
	if err != nil {
		return err
	}
	// who announces the addresses, as this host's controller keeps it
	// (run --announce=l2 or bgp; no file: no column)
	if snap, err := announce.ReadSnapshot(filepath.Join(filepath.Dir(s.stateFile), announce.SnapshotFile)); err == nil {
		rep.WithAnnounced(snap, time.Now())
	} else if !errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintln(e.stderr, "status: who announces the addresses is unknown:", err)
	}
	if output == "json" {
		err = rep.WriteJSON(e.stdout)
	} else {
		err = rep.WriteTable(e.stdout)
	}
	if err == nil && !rep.Healthy() {
		err = errUnhealthy
	}
	return err
}

// dataplaneStatus reads the status through the Data Plane API at
// --dataplane-url, with run's credentials. In single-Service mode
// (--service) the row is the operator's backend: --backend-name
// (HAPROXY_BACKEND_NAME), default the Service's name, as run names it.
func dataplaneStatus(ctx context.Context, dp *dataplaneFlags, s *shape, getenv func(string) string, stderr io.Writer) (status.Report, error) {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := dp.client(dpTarget{url: dp.url, user: dp.user, passwordFile: dp.passwordFile, tokenFile: dp.tokenFile}, getenv, log)
	if err != nil {
		return status.Report{}, err
	}
	opts := status.DataplaneOptions{Service: s.service, Seed: s.backend}
	if s.service != "" && opts.Seed == "" {
		_, opts.Seed, _ = strings.Cut(s.service, "/")
	}
	return status.CollectDataplane(ctx, c, opts)
}
