package bgp

import (
	"context"
	"log/slog"
)

// gobgpLogs is GoBGP's logger: the announcer's, at its level (warnings
// and above: the announcer logs the sessions and routes itself), less
// the one error GoBGP logs every time a server it was asked to stop
// gracefully (StopBgp keeping the routers' routes) is then stopped for
// good (Stop, which asks StopBgp again).
type gobgpLogs struct {
	slog.Handler
	level *slog.LevelVar
}

func newGobgpLogger(l *slog.Logger) (*slog.Logger, *slog.LevelVar) {
	level := new(slog.LevelVar)
	level.Set(slog.LevelWarn)
	return slog.New(gobgpLogs{l.With("gobgp", true).Handler(), level}), level
}

func (h gobgpLogs) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level.Level() && h.Handler.Enabled(ctx, l)
}

func (h gobgpLogs) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "failed to stop BGP server" {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h gobgpLogs) WithAttrs(as []slog.Attr) slog.Handler {
	return gobgpLogs{h.Handler.WithAttrs(as), h.level}
}

func (h gobgpLogs) WithGroup(name string) slog.Handler {
	return gobgpLogs{h.Handler.WithGroup(name), h.level}
}
