package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpWidth is where flag descriptions wrap: fixed, so the help is the
// same on every terminal (and in the golden files).
const helpWidth = 100

// envNote closes the help of every command with flags.
const envNote = `Every flag can also be set with an environment variable: HAPROXY_K8S_SYNC_ + the flag name
in upper case with - as _ (--bind-address: HAPROXY_K8S_SYNC_BIND_ADDRESS); the command line wins.
A long flag may also be written with one dash (-haproxy-config), as older units do.`

// writeHelp is the help of every command, on its standard output: what it
// does, how to call it, examples, its subcommands, then its flags grouped
// by concern.
func writeHelp(c *cobra.Command, _ []string) {
	w := c.OutOrStdout()
	desc := c.Long
	if desc == "" {
		desc = c.Short
	}
	fmt.Fprintf(w, "%s\n\nUsage:\n", strings.TrimSpace(desc))
	if c.Runnable() {
		fmt.Fprintf(w, "  %s\n", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "  %s COMMAND\n", c.CommandPath())
	}
	if c.Example != "" {
		fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(c.Example, "\n"))
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintln(w, "\nCommands:")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(w, "  %-*s %s\n", c.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	writeFlagGroups(w, c.LocalFlags(), c.Name() == "run")
	if c.HasAvailableInheritedFlags() {
		fmt.Fprintf(w, "\nGlobal flags:\n%s", c.InheritedFlags().FlagUsagesWrapped(helpWidth))
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\nUse \"%s COMMAND --help\" for more about a command.\n", c.CommandPath())
	}
	if c.Runnable() && c.HasAvailableLocalFlags() && c.Name() != "version" && c.Parent() != nil && c.Parent().Name() != "completion" {
		fmt.Fprintf(w, "\n%s\n", envNote)
	}
}

// scopeNotes follow the heading of a group of run's flags that all have
// that scope.
var scopeNotes = map[scope]string{
	scopeServices:  " (--mode=services)",
	scopeAPIServer: " (--mode=apiserver)",
	scopeLocal:     " (a local HAProxy: not the Data Plane API driver)",
	scopeDataplane: " (--driver=dataplane, --dataplane-url, or an --instance with dataplane-url)",
}

// writeFlagGroups writes the flags of fs under the heading of each group
// (flags without a group under Other), in groupOrder; with scopes, a
// heading says where its flags apply when they all apply in the same place.
func writeFlagGroups(w io.Writer, fs *pflag.FlagSet, scopes bool) {
	byGroup := map[string]*pflag.FlagSet{}
	scopeOf := map[string]scope{}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		g := groupOther
		if a := f.Annotations[annGroup]; len(a) > 0 {
			g = a[0]
		}
		if byGroup[g] == nil {
			byGroup[g] = pflag.NewFlagSet(g, pflag.ContinueOnError)
		}
		byGroup[g].AddFlag(f)
		if sc, seen := scopeOf[g]; !seen {
			scopeOf[g] = flagScope(f)
		} else if sc != flagScope(f) {
			scopeOf[g] = scopeAll
		}
	})
	for _, g := range groupOrder {
		if set := byGroup[g]; set != nil {
			note := ""
			if scopes {
				note = scopeNotes[scopeOf[g]]
			}
			fmt.Fprintf(w, "\n%s%s:\n%s", g, note, set.FlagUsagesWrapped(helpWidth))
		}
	}
}
