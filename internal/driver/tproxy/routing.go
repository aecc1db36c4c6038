package tproxy

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The policy routing TPROXY needs: a packet marked by the table's rules
// is routed by a table of the controller's own, whose one route delivers
// every destination locally (through lo), so that a packet to an address
// the host does not hold reaches the listener's socket instead of being
// forwarded. One rule and one route per family, created when missing and
// removed by Cleanup.

// routing is the policy routing of one network namespace.
type routing struct {
	mark        uint32
	table, prio int
}

func (r routing) rules() []*netlink.Rule {
	var out []*netlink.Rule
	for _, fam := range []int{unix.AF_INET, unix.AF_INET6} {
		rule := netlink.NewRule()
		rule.Family, rule.Mark, rule.Table, rule.Priority = fam, r.mark, r.table, r.prio
		mask := uint32(0xffffffff)
		rule.Mask = &mask
		out = append(out, rule)
	}
	return out
}

func (r routing) routes(lo int) []*netlink.Route {
	_, all4, _ := net.ParseCIDR("0.0.0.0/0")
	_, all6, _ := net.ParseCIDR("::/0")
	var out []*netlink.Route
	for _, dst := range []*net.IPNet{all4, all6} {
		out = append(out, &netlink.Route{LinkIndex: lo, Dst: dst, Table: r.table, Type: unix.RTN_LOCAL, Scope: netlink.SCOPE_HOST})
	}
	return out
}

func handle(ns netns.NsHandle) (*netlink.Handle, error) {
	if ns == netns.None() {
		return netlink.NewHandle(unix.NETLINK_ROUTE)
	}
	return netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
}

// ensure creates the rules and routes that are missing (idempotent:
// what is there is left alone).
func (r routing) ensure(ns netns.NsHandle) error {
	h, err := handle(ns)
	if err != nil {
		return fmt.Errorf("policy routing: %w", err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("policy routing: %w", err)
	}
	if lo.Attrs().Flags&net.FlagUp == 0 {
		if err := h.LinkSetUp(lo); err != nil {
			return fmt.Errorf("policy routing: lo up: %w", err)
		}
	}
	for _, rule := range r.rules() {
		have, err := h.RuleListFiltered(rule.Family, rule, netlink.RT_FILTER_TABLE|netlink.RT_FILTER_MARK)
		if err != nil {
			return fmt.Errorf("policy routing: listing rules: %w", err)
		}
		if len(have) > 0 {
			continue
		}
		if err := h.RuleAdd(rule); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("policy routing: ip rule add fwmark %#x lookup %d: %w", r.mark, r.table, err)
		}
	}
	for _, rt := range r.routes(lo.Attrs().Index) {
		if err := h.RouteReplace(rt); err != nil {
			return fmt.Errorf("policy routing: ip route replace local %s dev lo table %d: %w", rt.Dst, r.table, err)
		}
	}
	return nil
}

// remove deletes the rules and routes (Cleanup); missing ones are fine.
func (r routing) remove(ns netns.NsHandle) error {
	h, err := handle(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	var errs []error
	for _, rule := range r.rules() {
		have, err := h.RuleListFiltered(rule.Family, rule, netlink.RT_FILTER_TABLE|netlink.RT_FILTER_MARK)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i := range have {
			if err := h.RuleDel(&have[i]); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, err)
			}
		}
	}
	if lo, err := h.LinkByName("lo"); err == nil {
		for _, rt := range r.routes(lo.Attrs().Index) {
			if err := h.RouteDel(rt); err != nil && !errors.Is(err, unix.ESRCH) && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
