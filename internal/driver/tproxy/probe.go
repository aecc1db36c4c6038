package tproxy

import (
	"errors"
	"fmt"
	"os"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Undo removes what a Probe put in place that was not there before it:
// the table, the policy routing, or both; what an earlier controller
// left (a running table, its elements serving traffic) stays. Never nil.
type Undo func() error

// Probe reports whether the controller can set TPROXY up in the network
// namespace of opts (NetNS, "" its own): it puts the policy routing and
// the table in place as the driver does (Setup; the sets' elements left
// alone), and nil means they are there for the driver. undo removes what
// the probe added, for a caller that fails before its driver runs (run
// with a later error: nothing left on the host). On failure it removes
// what it put in place itself and returns why (the cause wrapped, so a
// missing capability reads as "operation not permitted"): the caller
// (--listeners=auto) then runs per-port frontends.
func Probe(opts Options) (undo Undo, err error) {
	undo = Since(opts)
	d, err := New(opts)
	if err == nil {
		err = d.Setup()
		d.Close()
	}
	if err == nil {
		return undo, nil
	}
	if cerr := undo(); cerr != nil {
		return func() error { return nil }, fmt.Errorf("%w (and removing what was set up: %v)", err, cerr)
	}
	return func() error { return nil }, err
}

// Since reads which of the table and the policy routing the namespace of
// opts holds now; its Undo removes what is put in place after (by Probe,
// New, a first Apply). Unreadable counts as absent: nothing there could
// be kept either.
func Since(opts Options) Undo {
	opts.defaults()
	had, _ := present(opts)
	return func() error { return remove(opts, !had.table, !had.routing) }
}

// inPlace is what of TPROXY's kernel side a namespace holds.
type inPlace struct{ table, routing bool }

// present reads which of the table and the policy routing's rules are in
// place in opts.NetNS.
func present(opts Options) (inPlace, error) {
	conn, ns, done, err := open(opts.NetNS)
	if err != nil {
		return inPlace{}, err
	}
	defer done()
	var p inPlace
	if t, err := conn.ListTableOfFamily(Table, nftables.TableFamilyINet); err == nil && t != nil {
		p.table = true
	}
	h, err := handle(ns)
	if err != nil {
		return p, err
	}
	defer h.Close()
	rt := routing{mark: opts.Mark, table: opts.RouteTable, prio: opts.RulePriority}
	p.routing = true
	for _, rule := range rt.rules() {
		have, err := h.RuleListFiltered(rule.Family, rule, netlink.RT_FILTER_TABLE|netlink.RT_FILTER_MARK)
		if err != nil {
			return p, err
		}
		p.routing = p.routing && len(have) > 0
	}
	return p, nil
}

// open is an nftables connection to the namespace at netnsPath ("" this
// process's) and its handle; done releases them.
func open(netnsPath string) (*nftables.Conn, netns.NsHandle, func(), error) {
	ns, done := netns.None(), func() {}
	var copts []nftables.ConnOption
	if netnsPath != "" {
		f, err := os.Open(netnsPath)
		if err != nil {
			return nil, ns, done, fmt.Errorf("network namespace: %w", err)
		}
		ns, done = netns.NsHandle(int(f.Fd())), func() { f.Close() }
		copts = append(copts, nftables.WithNetNSFd(int(f.Fd())))
	}
	conn, err := nftables.New(copts...)
	if err != nil {
		done()
		return nil, ns, func() {}, err
	}
	return conn, ns, done, nil
}

// Cleanup deletes the table and the policy routing (`cleanup`).
func Cleanup(netnsPath string, opts Options) error {
	opts.NetNS = netnsPath
	opts.defaults()
	return remove(opts, true, true)
}

// remove deletes the table and the policy routing of opts.NetNS, those
// asked for; missing ones are fine.
func remove(opts Options, tbl, rules bool) error {
	if !tbl && !rules {
		return nil
	}
	conn, ns, done, err := open(opts.NetNS)
	if err != nil {
		return err
	}
	defer done()
	var errs []error
	if t, err := conn.ListTableOfFamily(Table, nftables.TableFamilyINet); tbl && err == nil && t != nil {
		conn.DelTable(table)
		errs = append(errs, conn.Flush())
	}
	if rules {
		rt := routing{mark: opts.Mark, table: opts.RouteTable, prio: opts.RulePriority}
		errs = append(errs, rt.remove(ns))
	}
	return errors.Join(errs...)
}
