package model

import (
	"testing"
	"unsafe"
)

// TestHeldSizes guards the sizes of the structs the controller holds by
// the tens of thousands at 10,000 Services (issue 29's peak RSS): a
// Backend per Service port and per spare of the pool's view, a Slot per
// server slot of plan.Layout. A field added or moved that makes one
// larger fails here: place it where it costs no padding, or raise the
// bound knowingly.
func TestHeldSizes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		size, max uintptr
	}{
		{"Backend", unsafe.Sizeof(Backend{}), 240},
		{"Check", unsafe.Sizeof(Check{}), 88},
		{"Slot", unsafe.Sizeof(Slot{}), 40},
		{"Server", unsafe.Sizeof(Server{}), 32},
	} {
		if tc.size > tc.max {
			t.Errorf("model.%s is %d bytes, want at most %d", tc.name, tc.size, tc.max)
		}
	}
}
