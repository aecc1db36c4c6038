package render

// MonitorFrontend is the frontend that answers HAProxy's monitor-uri, a
// liveness endpoint that says "this HAProxy runs", whatever its servers
// do. The "_" keeps it apart from Service frontends, whose names start
// with a letter or digit.
const MonitorFrontend = "_monitor"

// MonitorURI is the path of the monitor frontend: 200 while HAProxy runs.
const MonitorURI = "/healthz"

func writeMonitor(w func(...string), opts Options) {
	if !opts.Monitor.IsValid() {
		return
	}
	w("")
	w("frontend", MonitorFrontend)
	w("\tmode http")
	w("\tbind", opts.Monitor.String())
	w("\tmonitor-uri", MonitorURI)
}
