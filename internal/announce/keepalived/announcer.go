package keepalived

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
)

// Options are the keepalived announcer's: the Config it renders, where
// keepalived reads it, and keepalived's pid file (its reload signal).
type Options struct {
	Config
	// ConfigPath is the keepalived.conf written (whole, atomically).
	ConfigPath string
	// PidFile is keepalived's main pid file: a new configuration is a
	// SIGHUP to that process (none while the file is missing: keepalived
	// reads the file when it starts).
	PidFile string
	Logger  *slog.Logger
}

// Announcer is an announce.Announcer that leaves the moving to
// keepalived: it writes the configuration when the addresses change
// (a reload of keepalived) and the health file when the health changes
// (no reload: keepalived tracks the file).
type Announcer struct {
	o   Options
	log *slog.Logger
	set announce.Latest[announce.Want]
}

var _ announce.Announcer = (*Announcer)(nil)

// New checks o (a configuration Render refuses is refused here).
func New(o Options) (*Announcer, error) {
	if o.ConfigPath == "" || o.PidFile == "" {
		return nil, fmt.Errorf("%w: the configuration file and keepalived's pid file are required", ErrConfig)
	}
	if _, err := Render(o.Config, nil); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Announcer{o: o, log: o.Logger.With("announce", "keepalived"), set: announce.NewLatest[announce.Want]()}, nil
}

// Set implements announce.Announcer.
func (a *Announcer) Set(w announce.Want) { a.set.Put(w) }

// Run implements announce.Announcer: until ctx ends it keeps the files
// as the newest Want says; then it marks the host unhealthy, so that
// keepalived lets its addresses go to another host.
func (a *Announcer) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return a.health(false)
		case w := <-a.set.C():
			if err := a.apply(w.Normal()); err != nil {
				a.log.Warn("keepalived", "error", err)
			}
		}
	}
}

// apply writes the health first when it fails (the addresses leave
// before anything else changes), the configuration, then the health
// when it passes.
func (a *Announcer) apply(w announce.Want) error {
	if !w.Healthy {
		if err := a.health(false); err != nil {
			return err
		}
	}
	conf, err := Render(a.o.Config, w.Addrs)
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(a.o.ConfigPath); err != nil || !bytes.Equal(old, conf) {
		if err := atomicfile.Write(a.o.ConfigPath, conf, 0o644); err != nil {
			return fmt.Errorf("keepalived configuration: %w", err)
		}
		if err := a.reload(); err != nil {
			return err
		}
		a.log.Info("keepalived configuration written", "addresses", len(w.Addrs))
	}
	if w.Healthy {
		return a.health(true)
	}
	return nil
}

// health writes the tracked file: 0 healthy, 1 not.
func (a *Announcer) health(ok bool) error {
	v := []byte("1\n")
	if ok {
		v = []byte("0\n")
	}
	if old, err := os.ReadFile(a.o.HealthFile); err == nil && bytes.Equal(old, v) {
		return nil
	}
	if err := atomicfile.Write(a.o.HealthFile, v, 0o644); err != nil {
		return fmt.Errorf("keepalived health file: %w", err)
	}
	a.log.Info("keepalived health", "healthy", ok)
	return nil
}

// reload signals keepalived to read its configuration again.
func (a *Announcer) reload() error {
	b, err := os.ReadFile(a.o.PidFile)
	if errors.Is(err, os.ErrNotExist) {
		a.log.Debug("keepalived not running (no pid file): it reads the configuration when it starts")
		return nil
	}
	if err != nil {
		return fmt.Errorf("keepalived pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return fmt.Errorf("keepalived pid file %s: %q is not a process", a.o.PidFile, b)
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		return fmt.Errorf("reloading keepalived (pid %d): %w", pid, err)
	}
	return nil
}
