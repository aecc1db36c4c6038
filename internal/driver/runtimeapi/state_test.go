package runtimeapi

import (
	"math/rand/v2"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// legacyKeepUnchanged is keepUnchanged as it was before it became a
// streaming filter (whole dump in, filtered dump out, without the final
// newline): the reference the filter must agree with line for line.
func legacyKeepUnchanged(out string, next model.Layout) string {
	version, rest, _ := strings.Cut(out, "\n")
	header, rest, _ := strings.Cut(rest, "\n")
	if strings.TrimSpace(version) != "1" || !strings.HasPrefix(header, "#") {
		return out
	}
	iBe, iSrv, iAddr, iPort := -1, -1, -1, -1
	for i, c := range strings.Fields(strings.TrimPrefix(header, "#")) {
		switch c {
		case "be_name":
			iBe = i
		case "srv_name":
			iSrv = i
		case "srv_addr":
			iAddr = i
		case "srv_port":
			iPort = i
		}
	}
	need := max(iBe, iSrv, iAddr, iPort)
	if min(iBe, iSrv, iAddr, iPort) < 0 {
		return out
	}
	var b strings.Builder
	b.WriteString(version + "\n" + header)
	for rest != "" {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) <= need || legacyKeeps(next, f[iBe], f[iSrv], f[iAddr], f[iPort]) {
			b.WriteString("\n" + line)
		}
	}
	return b.String()
}

func legacyKeeps(next model.Layout, be, srv, addr, port string) bool {
	for i, sl := range next[be] {
		if model.SlotName(i) == srv {
			return sl.Used && sl.Server.Addr.String() == addr && strconv.Itoa(int(sl.Server.Port)) == port
		}
	}
	return false
}

// filterDump applies keepUnchanged to a whole dump as
// haproxy.WriteServersState does while streaming: version and header, then
// the non-empty lines the filter keeps, each ending with a newline.
func filterDump(dump string, next model.Layout) string {
	lines := strings.Split(strings.TrimRight(dump, "\n"), "\n")
	keep := keepUnchanged(lines[1], next)
	var b strings.Builder
	b.WriteString(lines[0] + "\n" + lines[1] + "\n")
	for _, l := range lines[2:] {
		if l != "" && (keep == nil || keep([]byte(l))) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// keptSlots lists backend/slot of the server lines of a filtered dump.
func keptSlots(filtered string) []string {
	var out []string
	for i, l := range strings.Split(strings.TrimRight(filtered, "\n"), "\n") {
		if f := strings.Fields(l); i >= 2 && len(f) > 3 {
			out = append(out, f[1]+"/"+f[3])
		}
	}
	return out
}

func TestKeepUnchanged(t *testing.T) {
	const hdr = "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port"
	line := func(srv, addr, port string) string {
		return "\n3 be_a 1 " + srv + " " + addr + " 2 0 1 1 10 6 3 4 6 0 0 0 - " + port + " - 0 0 - - 0"
	}
	in := hdr + line("s1", "10.0.0.1", "30000") + line("s2", "10.0.0.2", "30000") + line("s3", "127.0.0.1", "1") + line("s4", "10.0.0.4", "30000") + "\n"
	srv := func(a string) model.Server { return model.Server{Addr: netip.MustParseAddr(a), Port: 30000} }
	next := model.Layout{"be_a": {
		{Used: true, Server: srv("10.0.0.1")}, // same server: keeps its state
		{Used: true, Server: srv("10.0.0.9")}, // another server
		{Used: true, Server: srv("10.0.0.3")}, // a free slot taken
		// s4 goes away
	}}
	want := hdr + line("s1", "10.0.0.1", "30000") + "\n"
	if got := filterDump(in, next); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// Unparsable input passes through: a header without the columns, or
	// a line too short to hold them.
	noPort := "1\n# be_id be_name srv_id srv_name srv_addr\n3 be_a 1 s9 10.0.0.1\n"
	if got := filterDump(noPort, next); got != noPort {
		t.Fatalf("header without srv_port: got %q", got)
	}
	short := hdr + "\n3 be_a 1 s9\n"
	if got := filterDump(short, next); got != short {
		t.Fatalf("short line: got %q", got)
	}
}

// TestKeepUnchangedRecordedDump filters a dump recorded from HAProxy 2.6
// (drained, maintenance, changed and IPv6 slots) and checks the filter
// against the expected slots and against legacyKeepUnchanged.
func TestKeepUnchangedRecordedDump(t *testing.T) {
	raw, err := os.ReadFile("testdata/servers-state.txt")
	if err != nil {
		t.Fatal(err)
	}
	dump := string(raw)
	ip := netip.MustParseAddr
	// name: the slot's, by its place in the list.
	used := func(_, addr string, port uint16) model.Slot {
		return model.Slot{Used: true, Server: model.Server{Addr: ip(addr), Port: port}}
	}
	free := func(_, addr string, port uint16) model.Slot {
		return model.Slot{Server: model.Server{Addr: ip(addr), Port: port}}
	}
	web := []model.Slot{
		used("s1", "10.0.0.1", 30080), // same server
		{Used: true, Server: model.Server{Addr: ip("10.0.0.2"), Port: 30080, Drain: true}}, // same, draining
		used("s3", "10.0.0.3", 30080), // same server, in maintenance now
		free("s4", "127.0.0.1", 1),    // stays free
	}
	api := []model.Slot{
		used("s1", "10.0.0.1", 30444), // another port
		used("s2", "10.0.0.7", 30443), // another address
		used("s3", "10.0.0.3", 30443), // same server
		used("s4", "10.0.0.4", 30443), // a free slot taken
		free("s5", "10.0.0.9", 30443), // free, remembering its address
		// s6..s8 go away
	}
	dns := []model.Slot{
		used("s1", "fd00::1", 30053),
		used("s2", "fd00:0:0::2", 30053), // same address, written otherwise
		used("s3", "fd00::33", 30053),
		used("s4", "127.0.0.1", 1), // the address of a free slot, now used
	}
	for name, tc := range map[string]struct {
		next model.Layout
		want []string
	}{
		"mixed": {model.Layout{"be_default_web_80": web, "be_default_api_443": api, "be_kube_dns_53": dns},
			[]string{"be_default_web_80/s1", "be_default_web_80/s2", "be_default_web_80/s3",
				"be_default_api_443/s3", "be_kube_dns_53/s1", "be_kube_dns_53/s2", "be_kube_dns_53/s4"}},
		"backends go away": {model.Layout{"be_default_web_80": web},
			[]string{"be_default_web_80/s1", "be_default_web_80/s2", "be_default_web_80/s3"}},
		"empty layout": {model.Layout{}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			got := filterDump(dump, tc.next)
			if legacy := legacyKeepUnchanged(strings.TrimSpace(dump), tc.next) + "\n"; got != legacy {
				t.Fatalf("filter and legacy differ:\n%s\nlegacy:\n%s", got, legacy)
			}
			if k := keptSlots(got); !slices.Equal(k, tc.want) {
				t.Fatalf("kept %v, want %v", k, tc.want)
			}
		})
	}

	// Random layouts over the same dump: the filter agrees with legacy.
	type slotRef struct{ be, name, addr, port string }
	var refs []slotRef
	for _, l := range strings.Split(strings.TrimSpace(dump), "\n")[2:] {
		f := strings.Fields(l)
		refs = append(refs, slotRef{f[1], f[3], f[4], f[18]})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		next := model.Layout{}
		for _, r := range refs {
			port, _ := strconv.Atoi(r.port)
			s := model.Slot{Used: rng.IntN(4) > 0, Server: model.Server{Addr: ip(r.addr), Port: uint16(port)}}
			switch rng.IntN(6) {
			case 0:
				continue // the slot goes away
			case 1:
				s.Server.Port++
			case 2:
				s.Server.Addr = s.Server.Addr.Next()
			}
			next[r.be] = append(next[r.be], s)
		}
		if got, legacy := filterDump(dump, next), legacyKeepUnchanged(strings.TrimSpace(dump), next)+"\n"; got != legacy {
			t.Fatalf("layout %v: filter and legacy differ:\n%s\nlegacy:\n%s", next, got, legacy)
		}
	}
}

func TestKeepUnchangedAllocatesNothingPerLine(t *testing.T) {
	raw, err := os.ReadFile("testdata/servers-state.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	next := model.Layout{"be_kube_dns_53": {{Used: true, Server: model.Server{Addr: netip.MustParseAddr("fd00::1"), Port: 30053}}}}
	keep := keepUnchanged(lines[1], next)
	body := make([][]byte, 0, len(lines)-2)
	for _, l := range lines[2:] {
		body = append(body, []byte(l))
	}
	keep(body[0]) // grows the reused field slice once
	if n := testing.AllocsPerRun(100, func() {
		for _, l := range body {
			keep(l)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per dump, want 0", n)
	}
}
