package tproxy

import "net/netip"

// What the kernel's sets hold, read back after a start, an Invalidate or
// a failed write: the driver then knows nothing of the wants.

// readBackAll reads every set back; the wants are then unknown.
func (d *Driver) readBackAll() {
	d.applied, d.appliedHTTP, d.appliedHTTPS = d.readBack(), d.readBackSets(kindHTTP), d.readBackSets(kindHTTPS)
	d.served = servedAddrs{}
	d.wants.unknown()
	d.httpWants.unknown()
}

// readBack reads the sets' elements (none when the table or a set is
// missing: the first batch creates them).
func (d *Driver) readBack() map[netip.AddrPort]bool { return d.readBackSets(kindTCP) }

// readBackSets reads one listener's sets.
func (d *Driver) readBackSets(k setKind) map[netip.AddrPort]bool {
	out := map[netip.AddrPort]bool{}
	for _, v6 := range []bool{false, true} {
		for _, k := range d.keysOf(setName(v6, k)) {
			if ap, ok := parseKey(k); ok {
				out[ap] = true
			}
		}
	}
	return out
}

// keysOf reads the keys of the table's set name (none when the table or
// the set is missing).
func (d *Driver) keysOf(name string) [][]byte {
	s, err := d.conn.GetSetByName(table, name)
	if err != nil {
		return nil
	}
	els, err := d.conn.GetSetElements(s)
	if err != nil {
		return nil
	}
	keys := make([][]byte, len(els))
	for i, e := range els {
		keys[i] = e.Key
	}
	return keys
}
