package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// HAProxy's stats page (HTML and CSV) and Prometheus exporter, rendered by
// --stats-address, show the Services' backends and servers; with
// --stats-auth-file they need the credentials, which are re-read when the
// file changes, and the config file carrying them is not world-readable.
func TestStatsPage(t *testing.T) {
	for _, tc := range []struct {
		name string
		auth bool
	}{{"loopback without credentials", false}, {"with credentials", true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			np := e.threeNodes()
			var args []string
			var page string
			authFile := filepath.Join(e.dir, "stats-auth")
			if tc.auth {
				addr := loopbackAddr(t)
				page = "http://" + addr
				if err := os.WriteFile(authFile, []byte("ops:first-pa55word\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				args = []string{"--stats-address", addr, "--stats-auth-file", authFile}
			} else {
				// No IP: loopback only, as there are no credentials.
				port := haproxytest.FreePort(t)
				page = fmt.Sprintf("http://127.0.0.1:%d", port)
				args = []string{"--stats-address", fmt.Sprintf(":%d", port)}
			}
			port := int32(haproxytest.FreePort(t))
			e.createService(lab.Service{Namespace: ns, Name: "web", Port: port, NodePort: np})
			e.startController(args...)
			e.eventually("web serves", serves(port, "n1", "n2", "n3"))
			be := e.pooledBackend(fmt.Sprintf("be_default_web_%d", port)) // a spare with a pool
			if !tc.auth && !strings.Contains(e.config(), fmt.Sprintf("bind 127.0.0.1:%d\n", e.statsPort(page))) {
				t.Fatalf("stats page not bound to loopback:\n%s", e.config())
			}

			user, pass := "ops", "first-pa55word"
			for _, path := range []string{"/stats", "/stats;csv", "/metrics"} {
				e.eventually(path+" shows the backend and its servers", pageShows(page+path, user, pass, tc.auth, be))
			}
			csv, _ := fetch(page+"/stats;csv", user, pass, tc.auth)
			if up := strings.Count(csv, be+",s"); up < 3 {
				t.Errorf("/stats;csv: %d server rows of %s, want 3 or more:\n%s", up, be, csv)
			}
			for i := 1; i <= 3; i++ { // the servers: the nodes' address and node port
				if node := fmt.Sprintf(",127.%d.0.%d:%d,", e.subnet, i, np); !strings.Contains(csv, node) {
					t.Errorf("/stats;csv does not show server %s:\n%s", node, csv)
				}
			}
			if !tc.auth {
				return
			}
			for _, path := range []string{"/stats", "/metrics"} {
				if _, code := fetch(page+path, "", "", false); code != http.StatusUnauthorized {
					t.Errorf("%s without credentials: %d, want 401", path, code)
				}
				if _, code := fetch(page+path, user, "wrong-pa55word", true); code != http.StatusUnauthorized {
					t.Errorf("%s with a wrong password: %d, want 401", path, code)
				}
			}
			if fi, err := os.Stat(e.cfgPath); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("config with credentials: mode %v (%v), want 0600", fi.Mode().Perm(), err)
			}

			// New credentials: the old ones stop working, the new work.
			if err := os.WriteFile(authFile, []byte("ops:second-pa55word\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			e.eventually("new credentials work", pageShows(page+"/stats", user, "second-pa55word", true, be))
			if _, code := fetch(page+"/stats", user, pass, true); code != http.StatusUnauthorized {
				t.Errorf("old credentials after the change: %d, want 401", code)
			}
			for _, secret := range []string{"first-pa55word", "second-pa55word"} {
				if strings.Contains(e.ctlLog.String(), secret) {
					t.Errorf("the controller's log contains a password")
				}
			}
		})
	}
}

func (e *env) statsPort(page string) int {
	var port int
	fmt.Sscanf(page[strings.LastIndex(page, ":")+1:], "%d", &port)
	return port
}

// fetch GETs url, with basic authentication when auth, and returns the
// body and status code (0 when the request failed).
func fetch(url, user, pass string, auth bool) (string, int) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err.Error(), 0
	}
	if auth {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error(), 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode
}

func pageShows(url, user, pass string, auth bool, backend string) func() error {
	return func() error {
		body, code := fetch(url, user, pass, auth)
		if code != http.StatusOK {
			return fmt.Errorf("%s: status %d: %.200s", url, code, body)
		}
		if !strings.Contains(body, backend) {
			return fmt.Errorf("%s does not show %s", url, backend)
		}
		if strings.HasSuffix(url, "/metrics") && !strings.Contains(body, `haproxy_server_status{proxy="`+backend+`",server="s`) {
			return fmt.Errorf("%s shows no server of %s", url, backend)
		}
		return nil
	}
}
