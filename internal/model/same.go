package model

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
