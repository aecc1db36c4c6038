package layer2

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// hostEnv names, in a child of the test binary, the file of the layer 2
// host it runs (TestMain): each host of newGroup is a process of its own
// inside its namespace, as on real machines, so a host that the machine
// does not run for a while stalls alone (its peers and the test's client
// keep their time), and an agent killed is a process killed.
const hostEnv = "HKS_L2_HOST"

// hostFile is what the child reads.
type hostFile struct {
	Config // less the logger, the metrics and OnMove (json:"-")
	Want   announce.Want
	// Socket: where the child answers the test (HTTP on a Unix socket:
	// GET /holds, GET /holders, PUT /want)
	Socket string
	// Events: the test's Unix socket the child writes its moves and its
	// late steps to, one hostEvent a line
	Events string
	// Log: the announcer's log lines to the child's log file too
	Log bool
	// Stats, when set: the admin socket of the host's HAProxy; the
	// child's Want.Healthy is then the real health gate's verdict
	// (announce.HealthGate, as run wires it), not the test's
	Stats string
}

// hostEvent is one line the child sends the test.
type hostEvent struct {
	Host string
	Move *announce.Move `json:",omitempty"`
	// At: when the host made the move (its clock, the machine's: the
	// stream may bring it later under load)
	At time.Time `json:",omitzero"`
	// Late: a step of the announcer that took longer than an interval
	Late time.Duration `json:",omitempty"`
}

// lateMessage is the announcer's log line for a step longer than an
// interval (moves.go: late).
const lateMessage = "a step of the announcer took longer than a heartbeat interval"

func TestMain(m *testing.M) {
	if f := os.Getenv(hostEnv); f != "" {
		os.Exit(hostMain(f))
	}
	os.Exit(m.Run())
}

// hostMain runs one host's announcer until SIGTERM (its stop: it lets go
// and tells the others, or keeps its addresses for a restart); SIGKILL
// is an agent that died.
func hostMain(file string) int {
	var hf hostFile
	b, err := os.ReadFile(file)
	if err == nil {
		err = json.Unmarshal(b, &hf)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "host file:", err)
		return 1
	}
	// its warnings always in its log (a failed test prints its end), the
	// rest with Log
	level := slog.LevelWarn
	if hf.Log {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ev, err := net.Dial("unix", hf.Events)
	if err != nil {
		log.Error("events", "error", err)
		return 1
	}
	defer ev.Close()
	// sent in order by one writer, so that the announcer's loop never
	// waits for the test reading
	events := make(chan hostEvent, 8192)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		enc := json.NewEncoder(ev)
		for e := range events {
			if err := enc.Encode(e); err != nil {
				log.Error("events", "error", err)
			}
		}
	}()
	cfg := hf.Config
	cfg.OnMove = func(m announce.Move) { events <- hostEvent{Host: cfg.ID, Move: &m, At: time.Now()} }
	cfg.Logger = slog.New(lateHandler{Handler: log.Handler(), late: func(d time.Duration) { events <- hostEvent{Host: cfg.ID, Late: d} }})
	a, err := New(cfg)
	if err != nil {
		log.Error("new", "error", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if hf.Stats == "" {
		a.Set(hf.Want)
	} else {
		// the controller's readiness is not here: always ready, so the
		// verdict is HAProxy's answer
		d := announce.NewDriver(a, hf.Want.Addrs...)
		_, _ = d.Apply(ctx, model.Config{})
		defer d.StartGate(ctx, func(context.Context) error { return nil }, hf.Stats, log)()
	}
	ln, err := net.Listen("unix", hf.Socket)
	if err != nil {
		log.Error("socket", "error", err)
		return 1
	}
	srv := &http.Server{Handler: hostAPI(a), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	err = a.Run(ctx)
	_ = srv.Close()
	close(events)
	<-sent
	if err != nil {
		log.Error("run", "error", err)
		return 1
	}
	return 0
}

// hostAPI is how the test asks the child's announcer what it holds and
// who holds what, and changes its Want.
func hostAPI(a *Announcer) http.Handler {
	mux := http.NewServeMux()
	answer := func(w http.ResponseWriter, r *http.Request, v any) {
		if r.Context().Err() != nil {
			http.Error(w, "the announcer did not answer", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /holds", func(w http.ResponseWriter, r *http.Request) { answer(w, r, a.Holds(r.Context())) })
	mux.HandleFunc("GET /holders", func(w http.ResponseWriter, r *http.Request) { answer(w, r, a.Holders(r.Context())) })
	mux.HandleFunc("PUT /want", func(w http.ResponseWriter, r *http.Request) {
		var want announce.Want
		if err := json.NewDecoder(r.Body).Decode(&want); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		a.Set(want)
	})
	return mux
}

// lateHandler passes the announcer's late steps to late and every record
// to the handler it wraps.
type lateHandler struct {
	slog.Handler
	late func(time.Duration)
}

func (l lateHandler) Enabled(context.Context, slog.Level) bool { return true }

func (l lateHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == lateMessage {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "took" && a.Value.Kind() == slog.KindDuration {
				l.late(a.Value.Duration())
			}
			return true
		})
	}
	if !l.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return l.Handler.Handle(ctx, r)
}

func (l lateHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return lateHandler{Handler: l.Handler.WithAttrs(as), late: l.late}
}

func (l lateHandler) WithGroup(name string) slog.Handler {
	return lateHandler{Handler: l.Handler.WithGroup(name), late: l.late}
}
