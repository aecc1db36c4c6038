package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/status"
)

// errUnhealthy makes `status` exit non-zero when something is down or
// HAProxy does not run the file's structure.
var errUnhealthy = errors.New("status: a server is down, a backend has no server up, or HAProxy does not run the config file's structure")

// statusCmd prints what the running HAProxy serves per Service port.
func statusCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("status", stderr)
	var s shape
	var cfgPath, output string
	s.register(fs)
	fs.StringVar(&cfgPath, "haproxy-config", "/etc/haproxy/haproxy.cfg", "haproxy.cfg the controller owns")
	fs.StringVar(&output, "o", "table", "output: table or json")
	if err := parse(fs, args, getenv, &s); err != nil {
		return err
	}
	if output != "table" && output != "json" {
		return fmt.Errorf("-o: want table or json, got %q", output)
	}
	rep, err := status.Collect(ctx, cfgPath, s.stats)
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
