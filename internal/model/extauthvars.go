package model

import (
	"sort"
	"strings"
)

// nginx variables in an auth or sign-in URL (ingress-nginx's auth-url and
// auth-signin: `https://$host/oauth2/start?rd=$escaped_request_uri`,
// oauth2-proxy's usual form). The URL is map data as written; the Lua
// action (render/extauth.lua) expands each variable from the request,
// never the controller, and nothing is written into the configuration.
// A variable is `$name` or `${name}`: one of ExtAuthVars, or a prefix of
// ExtAuthVarPrefixes followed by a name of lower-case letters, digits
// and '_' (nginx's $http_x_token: the request header x-token).

// ExtAuthVars are the nginx variables an auth or sign-in URL may hold,
// with what each is of the request (nginx's meaning).
var ExtAuthVars = map[string]string{
	"scheme":              "http or https",
	"host":                "the Host header, lower case, without its port",
	"http_host":           "the Host header as sent",
	"best_http_host":      "the Host header as sent",
	"server_port":         "the port the request came to",
	"request_uri":         "the path and query as sent",
	"escaped_request_uri": "request_uri escaped for a query value",
	"uri":                 "the path",
	"document_uri":        "the path",
	"args":                "the query (without '?')",
	"query_string":        "the query (without '?')",
	"is_args":             "'?' when there is a query, else empty",
	"request_method":      "the method",
	"remote_addr":         "the client's address",
}

// ExtAuthVarPrefixes are the families of variables naming a part of the
// request: a header (its name with '_' for '-'), a query parameter, a
// cookie.
var ExtAuthVarPrefixes = []string{"http_", "arg_", "cookie_"}

// extAuthVarSample stands for a variable's value when the URL around it
// is checked: a value that keeps that place valid.
func extAuthVarSample(name string) string {
	switch name {
	case "scheme":
		return "http"
	case "server_port":
		return "80"
	case "is_args":
		return "?"
	}
	return "x"
}

// ExtAuthVarNames lists ExtAuthVars' names, sorted, and the prefixes.
func ExtAuthVarNames() string {
	names := make([]string, 0, len(ExtAuthVars))
	for n := range ExtAuthVars {
		names = append(names, "$"+n)
	}
	sort.Strings(names)
	for _, p := range ExtAuthVarPrefixes {
		names = append(names, "$"+p+"NAME")
	}
	return strings.Join(names, ", ")
}

// knownExtAuthVar reports whether n names a variable.
func knownExtAuthVar(n string) bool {
	if _, ok := ExtAuthVars[n]; ok {
		return true
	}
	for _, p := range ExtAuthVarPrefixes {
		if rest, ok := strings.CutPrefix(n, p); ok && rest != "" {
			return true
		}
	}
	return false
}

func varByte(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' }

// withExtAuthVars replaces each variable of u by a sample value (the URL
// it makes is checked in their place): bad says why a '$' does not start
// a known variable ("" when none).
func withExtAuthVars(u string) (sampled string, bad string) {
	if !strings.Contains(u, "$") {
		return u, ""
	}
	var b strings.Builder
	for i := 0; i < len(u); i++ {
		if u[i] != '$' {
			b.WriteByte(u[i])
			continue
		}
		j, braced := i+1, false
		if j < len(u) && u[j] == '{' {
			j, braced = j+1, true
		}
		k := j
		for k < len(u) && varByte(u[k]) {
			k++
		}
		name := u[j:k]
		if braced {
			if k >= len(u) || u[k] != '}' {
				return "", "\"${\" without a closing \"}\" after a variable name"
			}
			k++
		}
		if name == "" {
			return "", "a '$' that starts no variable name"
		}
		if !knownExtAuthVar(name) {
			return "", "nginx variable $" + name + " is not one of " + ExtAuthVarNames()
		}
		b.WriteString(extAuthVarSample(name))
		i = k - 1
	}
	return b.String(), ""
}
