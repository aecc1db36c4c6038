package main

import (
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/shutdown"
)

// TestMain runs the demo itself when a test starts this binary as it
// (shutdown.Self): no test builds it.
func TestMain(m *testing.M) { shutdown.Main(m, map[string]func(){"main": main}) }
