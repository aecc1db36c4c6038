package haproxy

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
)

// From 3.4 a worker creates a backend at runtime (doc/management.txt of
// 3.4: "add backend NAME from DEFAULTS", its settings only from that named
// defaults section; "add server" for its servers; "publish backend" makes
// use_backend rules see it, until then they skip it). Measured on Debian's
// 3.4.7 (docs/testing.md, "Backends at runtime on 3.4"): a backend so
// added, named by a map entry of a frontend's dynamic use_backend rule,
// serves with no reload; each added server starts in maintenance and
// inherits no default-server line.
const dynamicBackendMajor, dynamicBackendMinor = 3, 4

// DynamicBackends reports whether v's worker adds backends at runtime
// (3.4+). The zero Version (not known) does not.
func (v Version) DynamicBackends() bool {
	return v.AtLeast(dynamicBackendMajor, dynamicBackendMinor)
}

// NewBackend is a backend to create at runtime: its settings come from a
// named defaults section of the running configuration, its servers are
// added one by one.
type NewBackend struct {
	Name     string // a model.Name: checked by the caller
	Defaults string // the named defaults section it takes its settings from
	Servers  []NewServer
}

// NewServer is one server of a NewBackend.
type NewServer struct {
	Name string
	Addr netip.AddrPort
	// Options are server keywords as `add server` takes them (a subset of
	// a server line's: `add server help` lists them), e.g. "check",
	// "inter 2s"; written by the caller from the model, never from user
	// text.
	Options  []string
	Disabled bool // left in maintenance: a free slot
}

// Commands are the Runtime API commands that create b and publish it, in
// order: the backend (unpublished), each server (HAProxy creates it in
// maintenance) and, unless Disabled, its return to service, and, for a
// server with "check" among its options, its health check enabled (off
// for an added server until then); publishing last, so no use_backend
// rule picks the backend before its servers are in place.
func (b NewBackend) Commands() []string {
	cmds := []string{"experimental-mode on", "add backend " + b.Name + " from " + b.Defaults}
	for _, s := range b.Servers {
		line := fmt.Sprintf("add server %s/%s %s", b.Name, s.Name, s.Addr)
		if len(s.Options) > 0 {
			line += " " + strings.Join(s.Options, " ")
		}
		cmds = append(cmds, line)
		for _, o := range s.Options {
			if o == "check" {
				cmds = append(cmds, fmt.Sprintf("enable health %s/%s", b.Name, s.Name))
				break
			}
		}
		if !s.Disabled {
			cmds = append(cmds, fmt.Sprintf("enable server %s/%s", b.Name, s.Name))
		}
	}
	return append(cmds, "publish backend "+b.Name)
}

// AddBackend creates b on the worker and publishes it (Commands, in one
// batch). An answer reporting an error (a backend of that name exists, the
// defaults section is unknown, a worker older than 3.4: "Unknown command")
// is an error wrapping ErrCommand naming the command; what the batch
// created before it stays, unpublished when publishing was not reached.
func (r *Runtime) AddBackend(ctx context.Context, b NewBackend) error {
	_, err := r.ExecChecked(ctx, b.Commands())
	if err != nil {
		return fmt.Errorf("adding backend %s: %w", b.Name, err)
	}
	return nil
}
