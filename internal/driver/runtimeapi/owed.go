package runtimeapi

import "strings"

// What the driver owes the running HAProxy beyond the difference between
// the pass's model and the last one applied. A pass that changed only
// servers (Config.Changes set, even empty: "the last pass's Config") takes
// the servers-only path, which applies that difference alone; a growth
// reload goes aside only when its own pass has nothing else to finish.
// Both ask owesReload, the one list of such debts, so that a new one
// cannot be forgotten by either:
//   - render options changed (SetStatsPage: optsReason), until a reload
//     writes them;
//   - the structure hash in doubt after a failed runtime change
//     (dynamicFailed, renewFailed), until a reload writes the files;
//   - client certificate files a pass could not commit to the worker
//     (clientFilesStale, clientcerts.go and frontcommits.go), until the
//     general path weighs them again (staleClientFiles, staleFrontFiles)
//     or a reload loads them.

// owesReload is why the running HAProxy needs a reload that the pass's
// model need not show; "" when the driver owes none.
func (d *HAProxy) owesReload() string {
	switch {
	case d.optsReason != "":
		return d.optsReason
	case d.hash == dynamicFailed || d.hash == renewFailed:
		return strings.Trim(d.hash, "()")
	case d.clientFilesStale:
		return "client certificate files the worker may not take at runtime"
	}
	return ""
}
