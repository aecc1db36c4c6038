package kubeapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// BinDir returns the directory holding kube-apiserver and etcd: $HKS_TESTBIN_DIR
// if set, else the one hack/testbin.sh prints (building the binaries on the
// first use on a machine, which takes minutes). The answer is cached for
// the life of the process.
func BinDir() (string, error) {
	binOnce.Do(func() {
		binDir, binErr = findBinDir()
		if binErr != nil {
			return
		}
		for _, b := range []string{"kube-apiserver", "etcd"} {
			if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
				binErr = fmt.Errorf("kubeapi: %s missing in %s: %w", b, binDir, err)
				return
			}
		}
	})
	return binDir, binErr
}

func findBinDir() (string, error) {
	if d := os.Getenv(EnvBinDir); d != "" {
		return d, nil
	}
	script, err := findScript()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Stderr = os.Stderr // build progress
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("kubeapi: %s: %w (set %s to skip it)", script, err, EnvBinDir)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	dir := strings.TrimSpace(lines[len(lines)-1])
	if dir == "" {
		return "", fmt.Errorf("kubeapi: %s printed no directory", script)
	}
	return dir, nil
}

const testbinModule = "github.com/haproxy-k8s-sync/haproxy-k8s-sync/hack/testbin"

// findScript locates hack/testbin.sh: next to this source file when the
// build kept source paths, else in the working directory or a parent.
func findScript() (string, error) {
	const rel = "hack/testbin.sh"
	var tried []string
	// Only our own repository's script: hack/testbin/go.mod must name it.
	ours := func(root string) bool {
		mod, err := os.ReadFile(filepath.Join(root, "hack", "testbin", "go.mod"))
		if err != nil || !bytes.Contains(mod, []byte(testbinModule)) {
			return false
		}
		_, err = os.Stat(filepath.Join(root, rel))
		return err == nil
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
		if ours(root) {
			return filepath.Join(root, rel), nil
		}
		tried = append(tried, root)
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if ours(d) {
				return filepath.Join(d, rel), nil
			}
			tried = append(tried, d)
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", errors.New("kubeapi: cannot find " + rel + " (looked under " + strings.Join(tried, ", ") + "); set " + EnvBinDir)
}
