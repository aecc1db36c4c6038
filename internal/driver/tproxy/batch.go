package tproxy

import "github.com/google/nftables"

// How the sets' element changes are cut for the kernel. google/nftables
// puts all the elements of one SetAddElements or SetDeleteElements call
// in one netlink message, under one nested attribute, and all the
// messages queued before a Flush in one sendmsg. Two limits of the
// kernel's netlink follow (measured on these machines, 2026-11-28):
//
//   - An attribute's length is 16 bits: the element list must stay under
//     65,535 bytes. An element of listen4 takes 20 bytes there (a list
//     element holding a key holding 8 bytes of data, 4 bytes of header
//     each), one of listen6 32 bytes: 3,276 and 2,047 elements at most.
//     Beyond that the length wraps: the kernel reads the wrapped prefix
//     as the list and the rest as other attributes of the message (the
//     table's name among them), and either refuses the batch with
//     ENOENT ("netlink receive: no such file or directory", 3,277 IPv4
//     elements) or, worse, takes only the prefix without an error (3,000
//     IPv6 elements: 952 in the set).
//   - A batch is one datagram, refused with EMSGSIZE ("message too
//     long") above the socket's send buffer (net.core.wmem_default,
//     212,992 bytes here: six messages of 1,000 IPv6 elements passed,
//     seven did not).
//
// So the changes go in messages of at most maxMsgBytes of elements and
// batches of at most maxBatchBytes, half of each limit. Element changes
// need no atomicity across batches: each batch is applied or not, and a
// failed one makes the driver read the sets back (Driver.applied = nil).
const (
	maxMsgBytes   = 32 << 10
	maxBatchBytes = 96 << 10
)

// elemBytes is what one element of the family's set takes in a message.
func elemBytes(v6 bool) int {
	if v6 {
		return 32
	}
	return 20
}

// elemOp is one message: elements added to or deleted from one set.
type elemOp struct {
	v6, del bool
	kind    setKind // whose set (httpsets.go)
	els     []nftables.SetElement
}

// batches cuts the changes into batches of messages within the limits,
// deletions first (a port that moves families never matters, but a full
// set would), each family's elements in their order.
func batches(del, add [2][]nftables.SetElement) [][]elemOp {
	var out [][]elemOp
	var cur []elemOp
	size := 0
	for _, isDel := range []bool{true, false} {
		src := add
		if isDel {
			src = del
		}
		for fam, els := range src {
			v6 := fam == 1
			per := maxMsgBytes / elemBytes(v6)
			for len(els) > 0 {
				n := min(per, len(els))
				if size+n*elemBytes(v6) > maxBatchBytes {
					out = append(out, cur)
					cur, size = nil, 0
				}
				cur = append(cur, elemOp{v6: v6, del: isDel, els: els[:n]})
				size += n * elemBytes(v6)
				els = els[n:]
			}
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
