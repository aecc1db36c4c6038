package render

import (
	"strconv"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// defaultServer is the keywords every server of be carries: its own
// check, and the PROXY protocol.
func defaultServer(be *model.Backend) string {
	var s string
	if be.Check.Enabled {
		s += checkArgs(be.Check)
	}
	if be.SendProxyV2 {
		s += " send-proxy-v2"
		// A check of another port (Check.Port) is not of the service
		// that reads the PROXY header.
		if be.Check.Enabled && be.Check.Port == 0 {
			s += " check-send-proxy"
		}
	}
	return s
}

// checkArgs is the server keywords of health check c.
func checkArgs(c model.Check) string {
	s := " check"
	if c.Inter > 0 {
		s += " inter " + settings.FormatDuration(c.Inter)
	}
	if c.Rise > 0 {
		s += " rise " + strconv.Itoa(c.Rise)
	}
	if c.Fall > 0 {
		s += " fall " + strconv.Itoa(c.Fall)
	}
	if c.Port > 0 {
		s += " port " + strconv.Itoa(int(c.Port))
	}
	if h := c.HTTP; h.SSL {
		s += " check-ssl"
		if h.CAFile != "" {
			s += " verify required ca-file " + h.CAFile
		} else {
			s += " verify none"
		}
		if h.CertFile != "" {
			s += " crt " + h.CertFile
		}
	}
	return s
}
