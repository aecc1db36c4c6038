package runtimeapi

import "strings"

// A map value may hold spaces and ';' (a header's value set by
// custom-headers or proxy-set-headers: model.ValidHeaderSetValue). In a
// map file the value is the rest of the line after the key, so the file
// needs nothing; the Runtime API splits a command into words on spaces
// and a line into commands on ';', each unless escaped with a backslash
// (HAProxy 2.6, 3.0 and 3.4 read `a\ b\;\ c` back as `a b; c`; a word
// after the value would be dropped without an error). So every value a
// command carries is escaped here. Keys never hold a space, ';' or a
// backslash (model's validators, ids); no value holds a backslash.

// CLIValue is v as one word of a Runtime API command.
func CLIValue(v string) string {
	if !strings.ContainsAny(v, " ;") {
		return v
	}
	var b strings.Builder
	b.Grow(len(v) + 8)
	for i := 0; i < len(v); i++ {
		if v[i] == ' ' || v[i] == ';' {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// cliMapLine is a map file's line ("key value") as the key and value
// words of `add map`.
func cliMapLine(l string) string {
	k, v, ok := strings.Cut(l, " ")
	if !ok {
		return l
	}
	return k + " " + CLIValue(v)
}
