package render

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// FileDescriptors is HAProxy's own count: every golden config (and the
// older rendering that checked the unbound slots), started by the real
// HAProxy 2.6 as the controller runs it (-W -S) under an open-file limit
// too low for it, makes HAProxy say how many it needs, and that is
// FileDescriptors' Need. Configs HAProxy refuses before (files they name
// that the test does not have) are skipped.
func TestFileDescriptorsAreHAProxys(t *testing.T) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatalf("haproxy not installed (make deps): %v", err)
	}
	alert := regexp.MustCompile(`Cannot raise FD limit to (\d+), limit is`)
	type input struct {
		name string
		goldenInput
		legacy Legacy
	}
	var inputs []input
	for name, in := range goldenInputs() {
		inputs = append(inputs, input{name, in, 0})
		if name == "tracked-nodecheck-http.cfg" {
			inputs = append(inputs, input{"loose-checked " + name, in, LooseChecked})
		}
	}
	sort.Slice(inputs, func(i, j int) bool { return inputs[i].name < inputs[j].name })
	var compared atomic.Int32
	t.Run("configs", func(t *testing.T) {
		for _, in := range inputs {
			t.Run(in.name, func(t *testing.T) {
				t.Parallel() // each waits about a second for HAProxy
				dir := t.TempDir()
				o := in.opts
				o.Legacy = in.legacy
				o.StatsSocket = filepath.Join(dir, "stats.sock")
				path := filepath.Join(dir, "haproxy.cfg")
				if err := os.WriteFile(path, Config(in.cfg, in.layout, o), 0o644); err != nil {
					t.Fatal(err)
				}
				// A hard limit of 40 is below every config's need; the shell
				// lowers it for HAProxy alone.
				cmd := exec.Command("sh", "-c", `ulimit -n 40 && exec "$0" "$@"`, bin, "-W", "-S", filepath.Join(dir, "master.sock"), "-f", path)
				out, _ := cmd.CombinedOutput()
				m := alert.FindSubmatch(out)
				if m == nil {
					t.Skipf("HAProxy stopped before its open-file limit:\n%s", out)
				}
				want, _ := strconv.Atoi(string(m[1]))
				got := FileDescriptors(in.cfg, in.layout, o, runtime.NumCPU())
				if got.Need() != want {
					t.Errorf("FileDescriptors: %s; HAProxy needs %d", got, want)
				}
				compared.Add(1)
			})
		}
	})
	if n := int(compared.Load()); n < len(inputs)/2 {
		t.Errorf("HAProxy reported its need for %d of %d configs only", n, len(inputs))
	}
}

// The free slots of a following backend reserve nothing; those of a
// backend with its own check, which a server placed at runtime needs,
// one each.
func TestFileDescriptorsOfSlots(t *testing.T) {
	tc, tl := tracked()
	nc := tc
	nodes := *tc.Backends[0]
	nodes.Check = model.Check{Enabled: true, Port: 10256}
	nc.Backends = []*model.Backend{&nodes, tc.Backends[1]}
	web := len(tl["be_default_web_80"])
	for _, c := range []struct {
		name   string
		cfg    model.Config
		legacy Legacy
		checks int
	}{
		{"agents on the nodes' slots, none elsewhere", tc, 0, len(tl[model.NodesBackend]) + 1},
		{"node check: the nodes' slots only", nc, 0, len(tl[model.NodesBackend]) + 1},
		{"older rendering: the unbound slots too", nc, LooseChecked, len(tl[model.NodesBackend]) + 1 + 2*(web-2)},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := opts
			o.Legacy = c.legacy
			if got := FileDescriptors(c.cfg, tl, o, 1).Checks; got != c.checks {
				t.Errorf("checks %d, want %d", got, c.checks)
			}
		})
	}
}
