package runtimeapi

import (
	"context"
	"fmt"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
)

// replaceFiles gives each of the running worker's ACL or map files (kind
// "acl" or "map", named as haproxy.cfg names them) the lines given for it,
// one atomic step per file: `prepare` a new version, `add` every line to
// it, `commit` it. Until the commit the old contents are in force whole;
// after it the new ones. It returns how many commands it sent.
func (d *HAProxy) replaceFiles(ctx context.Context, kind string, files []string, lines [][]string) (int, error) {
	prep := make([]string, len(files))
	for i, f := range files {
		prep[i] = "prepare " + kind + " " + f
	}
	ans, err := d.rt.ExecChecked(ctx, prep)
	if err != nil {
		return 0, err
	}
	var cmds []string
	for i, f := range files {
		v, ok := strings.CutPrefix(ans[i], "New version created: ")
		if !ok || v == "" || strings.ContainsAny(v, " \t@") {
			return 0, fmt.Errorf("%s: unexpected answer %q: %w", prep[i], ans[i], haproxy.ErrCommand)
		}
		for _, l := range lines[i] {
			cmds = append(cmds, "add "+kind+" @"+v+" "+f+" "+l)
		}
		cmds = append(cmds, "commit "+kind+" @"+v+" "+f)
	}
	if _, err := d.rt.ExecChecked(ctx, cmds); err != nil {
		return 0, err
	}
	return len(prep) + len(cmds), nil
}
