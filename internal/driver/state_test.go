package driver

import (
	"net/netip"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

func TestKeepUnchanged(t *testing.T) {
	const hdr = "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port"
	line := func(srv, addr, port string) string {
		return "\n3 be_a 1 " + srv + " " + addr + " 2 0 1 1 10 6 3 4 6 0 0 0 - " + port + " - 0 0 - - 0"
	}
	in := hdr + line("s1", "10.0.0.1", "30000") + line("s2", "10.0.0.2", "30000") + line("s3", "127.0.0.1", "1") + line("s4", "10.0.0.4", "30000") + "\n"
	srv := func(a string) model.Server { return model.Server{Addr: netip.MustParseAddr(a), Port: 30000} }
	next := model.Layout{"be_a": {
		{Name: "s1", Used: true, Server: srv("10.0.0.1")}, // same server: keeps its state
		{Name: "s2", Used: true, Server: srv("10.0.0.9")}, // another server
		{Name: "s3", Used: true, Server: srv("10.0.0.3")}, // a free slot taken
		// s4 goes away
	}}
	want := hdr + line("s1", "10.0.0.1", "30000")
	if got := keepUnchanged(in, next); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if got := keepUnchanged("garbage", next); got != "garbage" {
		t.Fatalf("unparsable input changed: %q", got)
	}
}
