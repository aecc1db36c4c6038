package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/status"
)

// errUnhealthy makes `status` exit non-zero when something is down or
// HAProxy does not run the file's structure.
var errUnhealthy = errors.New("status: a server is down, a backend has no server up, or HAProxy does not run the configuration (see docs/observability.md)")

// statusCmd prints what the running HAProxy serves per Service port.
func statusCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("status", stderr)
	var s shape
	var cfgPath, output string
	var dp dataplaneFlags
	s.register(fs)
	dp.registerAPI(fs)
	fs.StringVar(&cfgPath, "haproxy-config", "/etc/haproxy/haproxy.cfg", "haproxy.cfg the controller owns")
	fs.StringVar(&output, "o", "table", "output: table or json")
	if err := parse(fs, args, getenv, &s); err != nil {
		return err
	}
	if output != "table" && output != "json" {
		return fmt.Errorf("-o: want table or json, got %q", output)
	}
	var rep status.Report
	var err error
	if dp.url != "" {
		rep, err = dataplaneStatus(ctx, &dp, &s, getenv, stderr)
	} else {
		rep, err = status.Collect(ctx, cfgPath, s.stats)
	}
	if err != nil {
		return err
	}
	if output == "json" {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteTable(stdout)
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
