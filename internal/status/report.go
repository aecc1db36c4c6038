package status

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable prints one row per Service port and a last line on the
// structure hashes.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "SERVICE\tLISTEN\tBACKEND\tUP\tDRAINING\tDOWN\tMAINT\tLAST CHANGE\tIN SYNC"
	if r.Announced != nil {
		head += "\tANNOUNCED BY"
	}
	fmt.Fprintln(tw, head)
	sync := "yes"
	if !r.InSync {
		sync = "no"
	}
	for _, row := range r.Rows {
		svc := row.Service
		if svc == "" {
			svc = row.Frontend
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s", svc, strings.Join(row.Listen, ","), row.Backend,
			row.Up, row.Draining, row.Down, row.Maint, ago(row.LastChange), sync)
		if r.Announced != nil {
			fmt.Fprintf(tw, "\t%s", announcedCell(row, r.Announced))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Announced != nil {
		if err := r.Announced.write(w, r.now); err != nil {
			return err
		}
	}
	if r.Source == SourceDataplane {
		return r.writeProblems(w)
	}
	_, err := fmt.Fprintf(w, "config file structure %s, running %s: %s\n", orNone(r.FileHash), orNone(r.RunningHash), map[bool]string{true: "in sync", false: "OUT OF SYNC"}[r.InSync])
	return err
}

// WriteJSON prints the report as one JSON document.
func (r Report) WriteJSON(w io.Writer) error {
	type row struct {
		Row
		LastChange float64 `json:"lastChangeSeconds"`
	}
	out := struct {
		Report
		Healthy bool  `json:"healthy"`
		Rows    []row `json:"services"`
	}{Report: r, Healthy: r.Healthy(), Rows: make([]row, len(r.Rows))}
	for i, x := range r.Rows {
		out.Rows[i] = row{Row: x, LastChange: x.LastChange.Seconds()}
		if x.LastChange < 0 {
			out.Rows[i].LastChange = -1 // unknown
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func ago(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return d.String() + " ago"
}

func orNone(h string) string {
	if h == "" {
		return "(none)"
	}
	return h
}

// writeProblems ends a Data Plane API report: in sync, or why not.
func (r Report) writeProblems(w io.Writer) error {
	if r.InSync {
		_, err := fmt.Fprintln(w, "Data Plane API: in sync (no open transaction, every server runs as configured)")
		return err
	}
	if _, err := fmt.Fprintln(w, "Data Plane API: OUT OF SYNC"); err != nil {
		return err
	}
	for _, p := range r.Problems {
		if _, err := fmt.Fprintln(w, "  "+p); err != nil {
			return err
		}
	}
	return nil
}
