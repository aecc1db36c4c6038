package model

import "reflect"

// SameFrontend reports whether a and b are the same frontend value: the
// same fields, the same slices and pointers (a model shares what did not
// change, and so does the pool's view). Cheaper than Equal, it compares
// no slice element: two frontends it calls the same are Equal, and the
// memos that walk two passes side by side (spares/viewdelta.go, the
// structure hash's, render/memo.go) skip such a pair at once.
func SameFrontend(a, b *Frontend) bool {
	return a.Name == b.Name && a.Service == b.Service && a.AcceptProxy == b.AcceptProxy && a.MaxConn == b.MaxConn &&
		a.TimeoutClient == b.TimeoutClient && a.Backend == b.Backend && a.InspectDelay == b.InspectDelay &&
		a.TLS == b.TLS && a.HTTP == b.HTTP && SameSlice(a.Binds, b.Binds) &&
		SameSlice(a.SourceRanges, b.SourceRanges) && SameSlice(a.Routes, b.Routes)
}

// LayoutDelta says how a Layout was made from another (plan.AssignDelta):
// a copy of Base in which only the backends named in Changed may have
// other slots; every other key holds the very same slice as in Base, and
// no key was added or removed. The memos that compare two passes' layouts
// (the structure hash's, the driver's changed backends) then look at
// Changed alone, when the layout they compare with is Base itself
// (SameLayout).
type LayoutDelta struct {
	Base    Layout
	Changed []string
}

// SameLayout reports whether a and b are the very same map (not merely
// equal): a map written into is seen through both.
func SameLayout(a, b Layout) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}
