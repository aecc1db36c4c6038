package dataplaneapi

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane/dataplanetest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
)

// benchAPI is the API a benchmark of this package runs against: the real
// one when HKS_DATAPLANE_URL (with HKS_DATAPLANE_USERNAME and
// HKS_DATAPLANE_PASSWORD) is set, else a test server with the real API's
// measured cost (srv, nil for a real API).
type benchAPI struct {
	c   *dataplane.Client
	srv *dataplanetest.Server
}

func newBenchAPI(b *testing.B, timeout time.Duration) benchAPI {
	b.Helper()
	url, user, pw := os.Getenv("HKS_DATAPLANE_URL"), os.Getenv("HKS_DATAPLANE_USERNAME"), os.Getenv("HKS_DATAPLANE_PASSWORD")
	var a benchAPI
	if url == "" {
		a.srv = dataplanetest.Start(b, dataplanetest.Options{Cost: dataplanetest.MeasuredCost})
		url = a.srv.URL
	}
	c, err := dataplane.New(dataplane.Options{URL: url, Username: user, Password: pw, Timeout: timeout})
	if err != nil {
		b.Fatal(err)
	}
	a.c = c
	return a
}

// reloads is how many times HAProxy reloaded: the test server's count, or
// the real API's HAProxy's from its master (HKS_DATAPLANE_MASTER_SOCKET;
// 0 without it).
func (a benchAPI) reloads(b *testing.B) int {
	if a.srv != nil {
		return a.srv.Reloads()
	}
	m := os.Getenv("HKS_DATAPLANE_MASTER_SOCKET")
	if m == "" {
		return 0
	}
	p, err := haproxy.NewMaster(m).ShowProc(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return p.Reloads
}
