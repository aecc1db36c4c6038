package runtimeapi

import (
	"log/slog"
	"time"
)

// stages times the steps of one piece of work (a reload's write, its
// end) for the debug log: where a fresh start's reload goes (issue 29).
type stages struct {
	last  time.Time
	attrs []any
}

func newStages() *stages { return &stages{last: time.Now()} }

// mark ends the step named name.
func (s *stages) mark(name string) {
	now := time.Now()
	s.attrs = append(s.attrs, slog.Duration(name, now.Sub(s.last)))
	s.last = now
}

// log writes the steps as one debug line.
func (s *stages) log(log *slog.Logger, msg string) {
	log.Debug(msg, s.attrs...)
}
