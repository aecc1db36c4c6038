package plan

import (
	"maps"
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Twins a renewal left behind (Renew): a controller restarted while one
// was under way finds them in `show servers state`, beside the slots,
// and ends the renewal from there without a reload (Settle).

// TwinIndex returns i for the name TwinName(i) ("r1" is 0), and false for
// any other name.
func TwinIndex(name string) (int, bool) {
	if len(name) < 2 || name[0] != 'r' {
		return 0, false
	}
	return SlotIndex("s" + name[1:])
}

// Twins maps a backend to the states of the twins HAProxy reports in it,
// by the index of the slot each stands in for.
type Twins map[string]map[int]Actual

// Settle lists the phases that end a renewal of backend be cut short,
// from what HAProxy reports: its slots (element i: slot
// model.SlotName(i), every one present) and the twins left (twins, by
// slot index). A twin serving stands in for its slot, whose server it
// points at: the slot serves again as the twin does (held until its
// check passes when checked, and waited for), then the twins go into
// maintenance and are deleted. The slots keep the servers they were
// created with: whether they hold the bundle the renewal was for is not
// known, and the controller sets its CA files again after a restart
// anyway, which renews them afresh.
func Settle(be string, slots []Actual, twins map[int]Actual, checked bool) []Phase {
	if len(twins) == 0 {
		return nil
	}
	var back, twinsOut, twinsGone Phase
	for i := range len(slots) {
		tw, ok := twins[i]
		if !ok || tw.Maint {
			continue
		}
		slot, a := model.SlotName(i), slots[i]
		if !a.Maint && a.Server.Key() == tw.Server.Key() && a.Server.Drain == tw.Server.Drain {
			if checked {
				back.Up = append(back.Up, slot) // it may have been created again, its check not passed yet
			}
			continue
		}
		if a.Server.Key() != tw.Server.Key() {
			if !a.Maint {
				back.Ops = append(back.Ops, Op{Kind: Maint, Backend: be, Slot: slot})
			}
			back.Ops = append(back.Ops, Op{Kind: SetAddr, Backend: be, Slot: slot, Server: tw.Server})
		}
		back.Ops, back.Up = bringIn(back.Ops, back.Up, be, slot, tw.Server.Drain, checked)
	}
	for _, i := range slices.Sorted(maps.Keys(twins)) {
		twin := TwinName(i)
		if !twins[i].Maint {
			twinsOut.Ops = append(twinsOut.Ops, Op{Kind: Maint, Backend: be, Slot: twin})
		}
		twinsGone.Ops = append(twinsGone.Ops, Op{Kind: Delete, Backend: be, Slot: twin})
	}
	return []Phase{back, twinsOut, twinsGone}
}
