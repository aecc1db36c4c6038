package runtimeapi

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
)

// What a renewal's phase waits for (renew.go), each looked at once a pass.

// deleteIdle tries once to delete each of srvs ("backend/server", in
// maintenance) and returns those it left: a stream still names them
// (streamrefs.go), or HAProxy refused, because connections remain: their
// idle connections are dropped (dropIdle) for the next try. Past until
// (the drain), their streams are shut first, and a refusal is an error;
// a stream naming one a drain after that is an error too.
func (d *HAProxy) deleteIdle(ctx context.Context, srvs []string, until time.Time, res *driver.Result) (left []string, err error) {
	now := time.Now()
	shut := now.After(until)
	if shut {
		for _, srv := range srvs {
			d.log.Warn("server still has connections after the drain; shutting them", "server", srv, "drain", renewDrain)
			if _, err := d.rt.ExecChecked(ctx, []string{"shutdown sessions server " + srv}); err != nil {
				return nil, err
			}
			res.Ops++
		}
	}
	named, err := d.namedByStreams(ctx, res)
	if err != nil {
		return nil, err
	}
	for _, srv := range srvs {
		if named[srv] {
			if now.After(until.Add(renewDrain)) {
				return nil, fmt.Errorf("server %s still named by a stream %s after its drain", srv, renewDrain)
			}
			left = append(left, srv)
			continue
		}
		_, err := d.rt.ExecChecked(ctx, []string{"del server " + srv})
		res.Ops++
		var ce *haproxy.CommandError
		switch {
		case err == nil:
			continue
		case shut || !errors.As(err, &ce):
			return nil, err // past the drain, or the socket, not the answer
		}
		// Connections that went idle after the server entered
		// maintenance stay in its pool until purged (seen on 2.6.12:
		// more than 10 s); entering maintenance again drops them.
		if err := d.dropIdle(ctx, srv, res); err != nil {
			return nil, err
		}
		left = append(left, srv)
	}
	return left, nil
}

// dropIdle puts server srv ("backend/server", in maintenance) into drain
// and back into maintenance when it has idle connections and none in use:
// entering maintenance drops a server's idle connections (drain takes no
// new connection from the balancing).
func (d *HAProxy) dropIdle(ctx context.Context, srv string, res *driver.Result) error {
	be, _, _ := strings.Cut(srv, "/")
	ans, err := d.rt.ExecChecked(ctx, []string{"show servers conn " + be})
	res.Ops++
	if err != nil {
		return err
	}
	if used, idle := serverConns(ans[0], srv); used != 0 || idle == 0 {
		return nil
	}
	_, err = d.rt.ExecChecked(ctx, []string{"set server " + srv + " state drain", "set server " + srv + " state maint"})
	res.Ops += 2
	return err
}

// serverConns reads the connections in use and idle of server srv
// ("backend/server") from `show servers conn`'s answer (-1: not listed).
func serverConns(answer, srv string) (used, idle int) {
	for _, line := range strings.Split(answer, "\n") {
		// bkname/svname bkid/svid addr port - purge_delay used_cur
		// used_max need_est unsafe_nb safe_nb idle_lim idle_cur ...
		f := strings.Fields(line)
		if len(f) > 12 && f[0] == srv {
			u, err1 := strconv.Atoi(f[6])
			i, err2 := strconv.Atoi(f[12])
			if err1 == nil && err2 == nil {
				return u, i
			}
		}
	}
	return -1, -1
}

// notRunning lists the names among names that `show servers state`'s
// answer does not report running (srv_op_state 2).
func notRunning(answer string, names []string) []string {
	running := map[string]bool{}
	for _, line := range strings.Split(answer, "\n") {
		f := strings.Fields(line)
		// be_id be_name srv_id srv_name srv_addr srv_op_state ...
		if len(f) > 5 && !strings.HasPrefix(f[0], "#") && f[5] == "2" {
			running[f[3]] = true
		}
	}
	var out []string
	for _, n := range names {
		if !running[n] {
			out = append(out, n)
		}
	}
	return out
}
