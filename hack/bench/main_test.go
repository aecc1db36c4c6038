package main

import (
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/shutdown"
)

// TestMain runs the benchmark, or the controller it drives, when a test
// starts this binary as one of them (shutdown.Self): no test builds
// either.
func TestMain(m *testing.M) {
	shutdown.Main(m, map[string]func(){
		"main":       main,
		"controller": cli.Exit,
	})
}
