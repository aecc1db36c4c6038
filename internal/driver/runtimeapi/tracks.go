package runtimeapi

import (
	"log/slog"
	"os"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// restoreTracks sets the Track of the slots of layout (read back from the
// Runtime API, which does not show which server a server tracks) from the
// config file at path, if that file is the one HAProxy runs: its
// description carries hash. Otherwise the bindings stay empty, the
// structure hash then differs from the running one, and the next pass
// reloads, which binds the slots again: slower, never wrong.
func restoreTracks(layout model.Layout, path, hash string, log *slog.Logger) {
	f := openRendered(path, hash)
	if f == nil {
		return
	}
	defer f.Close()
	type bound struct {
		be    string
		slot  int
		track uint16
	}
	var found []bound
	matches := false
	err := render.ScanConfig(f, func(section, be string, fields []string) {
		switch {
		case len(fields) == 2 && fields[0] == "description":
			matches = fields[1] == render.DescriptionPrefix+hash
		case section == "backend" && len(fields) >= 5 && fields[0] == "server":
			// server <slot> <addr> [disabled] track <NodesBackend>/<slot> [# drain]
			for i := 3; i+1 < len(fields); i++ {
				if fields[i] != "track" {
					continue
				}
				t, ok := strings.CutPrefix(fields[i+1], model.NodesBackend+"/")
				node, okNode := plan.SlotIndex(t)
				slot, okSlot := plan.SlotIndex(fields[1])
				if ok && okNode && okSlot && node < 1<<16-1 {
					found = append(found, bound{be, slot, uint16(node + 1)})
				}
				break
			}
		}
	})
	if err != nil || !matches {
		log.Debug("slot bindings to nodes not recovered from the config file; the next pass reloads if any backend tracks nodes",
			"path", path, "error", err)
		return
	}
	for _, b := range found {
		if slots := layout[b.be]; b.slot < len(slots) {
			slots[b.slot].Track = b.track
		}
	}
}

// openRendered opens the config file at path to read back what the
// running HAProxy loaded (hash, read from it), nil when that hash is none
// of this controller's or the file cannot be opened. The caller checks
// the file's own description against hash.
func openRendered(path, hash string) *os.File {
	if hash == "" || hash == foreignHash {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	return f
}
