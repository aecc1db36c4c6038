package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// statsFlags are the flags of HAProxy's own stats page and exporter.
type statsFlags struct {
	addr, authFile string
	public         bool

	bind model.Bind
	auth render.StatsAuth
	raw  []byte // the auth file's content last read (never logged)
}

func (s *statsFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&s.addr, "stats-address", "", "[IP]:PORT where HAProxy serves its stats page (/stats, /stats;csv) and Prometheus exporter (/metrics), e.g. :8404; off when empty. Without --stats-auth-file it listens on loopback only, unless --stats-public")
	fs.StringVar(&s.authFile, "stats-auth-file", "", "file holding one USER:PASSWORD line: basic authentication for the stats page and exporter (re-read when it changes; keep it mode 600)")
	fs.BoolVar(&s.public, "stats-public", false, "let the stats page listen beyond loopback without authentication")
}

// resolve checks the flags and reads the auth file, and sets the stats
// page in opts.
func (s *statsFlags) resolve(opts *render.Options, log *slog.Logger) error {
	if s.addr == "" {
		if s.authFile != "" {
			return flagErr("--stats-auth-file needs --stats-address")
		}
		return nil
	}
	var err error
	if s.bind, err = model.ParseBind(s.addr); err != nil {
		return flagErr("--stats-address: %v", err)
	}
	if s.authFile != "" {
		if err := s.read(log); err != nil {
			return fmt.Errorf("--stats-auth-file: %w", err)
		}
	} else if !s.public {
		switch {
		case !s.bind.Addr.IsValid():
			s.bind.Addr = netip.MustParseAddr("127.0.0.1")
			log.Info("stats page on loopback only: no --stats-auth-file or --stats-public", "address", netip.AddrPortFrom(s.bind.Addr, s.bind.Port).String())
		case !s.bind.Addr.IsLoopback():
			return flagErr("--stats-address %s is not a loopback address: give --stats-auth-file, or --stats-public to serve the page without authentication", s.addr)
		}
	}
	if m := opts.Monitor; m.IsValid() && m.Port() == s.bind.Port &&
		(!s.bind.Addr.IsValid() || m.Addr().IsUnspecified() || m.Addr() == s.bind.Addr) {
		return flagErr("--stats-address %s and --monitor-address %s would listen on the same address: give the stats page another port", s.addr, m)
	}
	opts.Stats, opts.StatsAuth = s.bind, s.auth
	return nil
}

// read reads and checks the auth file; it warns when others than its
// owner may read it. Errors never carry the password.
func (s *statsFlags) read(log *slog.Logger) error {
	fi, err := os.Stat(s.authFile)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(s.authFile)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o044 != 0 {
		log.Warn("the stats auth file can be read by group or others: make it mode 600", "file", s.authFile, "mode", fi.Mode().Perm().String())
	}
	auth, err := parseStatsAuth(raw)
	if err != nil {
		return err
	}
	s.auth, s.raw = auth, raw
	return nil
}

// parseStatsAuth reads "USER:PASSWORD" on one line (a final newline is
// allowed).
func parseStatsAuth(raw []byte) (render.StatsAuth, error) {
	line := strings.TrimSuffix(strings.TrimSuffix(string(raw), "\n"), "\r")
	user, password, ok := strings.Cut(line, ":")
	if !ok || strings.ContainsAny(line, "\n") {
		return render.StatsAuth{}, errors.New("want one USER:PASSWORD line")
	}
	a := render.StatsAuth{User: user, Password: password}
	return a, a.Validate()
}

// statsTarget is what the auth file's changes go to (the HAProxy driver).
type statsTarget interface {
	SetStatsPage(bind model.Bind, auth render.StatsAuth, reason string)
}

// watch re-reads the auth file every interval and, when its content
// changed and is valid, gives the new credentials to the driver and asks
// for a pass (which reloads). An invalid or missing file keeps the
// credentials in force.
func (s *statsFlags) watch(ctx context.Context, interval time.Duration, to statsTarget, trigger func(), log *slog.Logger) {
	if s.authFile == "" || s.bind.Port == 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		raw, err := os.ReadFile(s.authFile)
		if err == nil && bytes.Equal(raw, s.raw) {
			failing = false
			continue
		}
		if err == nil {
			err = s.read(log)
		}
		if err != nil {
			if !failing {
				log.Error("stats auth file unusable; keeping the credentials in force", "file", s.authFile, "err", err)
			}
			failing = true
			continue
		}
		failing = false
		log.Info("stats credentials changed; reloading", "file", s.authFile, "user", s.auth.User)
		to.SetStatsPage(s.bind, s.auth, "stats credentials changed")
		trigger()
	}
}
