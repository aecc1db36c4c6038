package main

import "path/filepath"

// quietArgs are the flags that make the controller under test render
// HAProxy's quiet (-haproxy-quiet): never for -base-controller-bin's run,
// so that one binary given as both compares a run without quiet against
// one with it, in one world.
func (c *config) quietArgs() []string {
	if c.haproxyQuiet && !c.baseRun {
		return []string{"--haproxy-quiet"}
	}
	return nil
}

// runName names a run of mode (hybrid, reload) in the table: base-MODE
// for -base-controller-bin's, else MODE-LISTENERS, with -quiet when the
// controller renders quiet.
func (c *config) runName(mode string) string {
	name := mode + "-" + c.listeners
	if c.baseRun {
		name = "base-" + c.listeners
	}
	if len(c.quietArgs()) > 0 {
		name += "-quiet"
	}
	return name
}

// runDir is the run's own directory under root (hybrid-tproxy,
// reload-ports, hybrid-tproxy-base, ...): the base run's apart from the
// run under test even when both run the same binary.
func (c *config) runDir(root, mode string) string {
	dir := filepath.Join(root, mode+"-"+c.listeners)
	if c.baseRun {
		dir += "-base"
	}
	if len(c.quietArgs()) > 0 {
		dir += "-quiet"
	}
	return dir
}
