package runtimeapi

import (
	"reflect"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

func TestUpThenDown(t *testing.T) {
	op := func(k plan.OpKind, be, slot string) plan.Op { return plan.Op{Kind: k, Backend: be, Slot: slot} }
	ops := []plan.Op{
		op(plan.Maint, "a", "s1"), op(plan.SetAddr, "a", "s1"), // leaves service, then re-pointed
		op(plan.SetAddr, "b", "s1"), op(plan.Ready, "b", "s1"), // comes into service
		op(plan.Drain, "b", "s2"),
		op(plan.SetAddr, "c", "s1"), // moves, stays in service
		op(plan.Maint, "c", "s2"),
	}
	up, down := upThenDown(ops)
	wantUp := []plan.Op{ops[2], ops[3], ops[5]}
	wantDown := []plan.Op{ops[0], ops[1], ops[4], ops[6]}
	if !reflect.DeepEqual(up, wantUp) || !reflect.DeepEqual(down, wantDown) {
		t.Errorf("up %v, down %v; want %v, %v", up, down, wantUp, wantDown)
	}
	if up, down := upThenDown(nil); up != nil || down != nil {
		t.Error("no operations split into some")
	}
}
