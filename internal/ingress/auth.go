package ingress

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // htpasswd's {SHA} scheme is SHA-1; HAProxy compares the same digest
	"encoding/base64"
	"slices"
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// Basic authentication: ingress-nginx's auth-type: basic with
// auth-secret (auth-secret-type auth-file) and auth-realm, HAProxy
// Ingress's auth-secret and auth-realm. The Secret's key "auth" is an
// htpasswd file; its {SHA} entries (and nginx's {PLAIN}, digested here)
// become model.BasicAuth users, map data (render/httpauth.go): a user
// added, changed or removed reloads nothing. An entry in a format HAProxy
// cannot check from a map (apr1, bcrypt, crypt and its SHA-2 variants,
// salted {SSHA}) is named in an Event and the Ingress fails closed: no
// user is admitted (401), as when the Secret is missing or has no "auth".

// AuthKey is the key of an htpasswd file in a Secret.
const AuthKey = "auth"

// MaxAuthFile bounds an htpasswd file read (the source keeps no more).
const MaxAuthFile = 64 << 10

// DefaultRealm is the realm when the Ingress names none.
const DefaultRealm = "Authentication Required"

// authAnnotations are the authentication annotations, checked.
type authAnnotations struct {
	basic  bool   // auth-type: basic (ingress-nginx), or HAProxy Ingress's auth-secret
	secret string // the Secret's name (its namespace checked by compileOne)
	nginx  bool   // the secret named by ingress-nginx's key
	realm  string
	auth   *model.BasicAuth   // resolved by compileOne
	ext    extAuthAnnotations // auth-url and its keys (extauth.go)
}

// parseAuth reads key (canonical; name without its prefix) into s when it
// is an authentication key: done is false for the others.
func (s *parsed) parseAuth(key, name, val string) (why string, done bool) {
	nginx := strings.HasPrefix(key, NginxPrefix)
	a := &s.auth
	switch name {
	case "auth-type":
		if !strings.EqualFold(val, "basic") {
			return settings.ShowValue(val) + " is not served (basic only): served without it, the Ingress would be open", true
		}
		a.basic = true
	case "auth-secret":
		if val == "" {
			return "empty", true
		}
		if a.secret != "" && a.secret != val {
			return "names another Secret than " + settings.ShowValue(a.secret) + ": which users are admitted is ambiguous", true
		}
		a.secret, a.nginx = val, a.nginx || nginx
		if !nginx {
			a.basic = true
		}
	case "auth-secret-type":
		if val != "auth-file" {
			return settings.ShowValue(val) + " is not served (auth-file only: an htpasswd file under the key auth)", true
		}
	case "auth-realm":
		if !model.ValidRealm(val) {
			return settings.ShowValue(val) + " is not a realm: visible ASCII and spaces without quotes or backslashes, at most 256 bytes", true
		}
		a.realm = val
	default:
		return a.ext.parseExtAuth(key, name, val) // extauth.go
	}
	return "", true
}

// finish checks the keys together ("" or why the Ingress is refused).
func (a *authAnnotations) finish() string {
	if why := a.ext.finish(); why != "" {
		return why
	}
	switch {
	case a.secret != "" && !a.basic:
		return "annotation " + NginxPrefix + "auth-secret: without auth-type: basic the Ingress would be served open"
	case a.basic && a.secret == "":
		return "annotation " + NginxPrefix + "auth-type: basic needs auth-secret: served without it, the Ingress would be open"
	}
	return ""
}

// resolve sets a.auth, the Ingress's basic authentication, from its
// Secret's htpasswd file (nil when it has none); event reports what keeps
// users out (the Ingress still fails closed). why refuses the Ingress: a
// Secret of another namespace.
func (a *authAnnotations) resolve(ns string, files map[Key][]byte, event func(reason, msg string)) (why string) {
	if !a.basic {
		return ""
	}
	name := a.secret
	if n, rest, ok := strings.Cut(name, "/"); ok {
		if n != ns {
			return "auth-secret " + settings.ShowValue(a.secret) + ": a Secret of another namespace is not read"
		}
		name = rest
	}
	realm := a.realm
	if realm == "" {
		realm = DefaultRealm
	}
	a.auth = &model.BasicAuth{Realm: realm}
	k := Key{ns, name}
	file, ok := files[k]
	if !ok {
		event("InvalidAuthSecret", "Secret "+k.String()+": not found, or no key "+AuthKey+" of at most "+strconv.Itoa(MaxAuthFile)+" bytes; nobody is admitted (401)")
		return ""
	}
	users, problems := ParseHTPasswd(file)
	if len(problems) > 0 {
		event("InvalidAuthSecret", "Secret "+k.String()+": "+strings.Join(problems, "; ")+"; only {SHA} (htpasswd -s) and {PLAIN} entries are served: nobody is admitted (401)")
		return ""
	}
	a.auth.Users = users
	return ""
}

// maxUsers bounds the users of one htpasswd file.
const maxUsers = 10_000

// ParseHTPasswd reads an htpasswd file: its users sorted by name (the
// first entry of a name wins, as nginx reads the file), and what is wrong
// with each line not served (never the line's hash or password).
func ParseHTPasswd(file []byte) ([]model.BasicUser, []string) {
	var users []model.BasicUser
	var problems []string
	seen := map[string]bool{}
	for i, line := range bytes.Split(file, []byte("\n")) {
		l := strings.TrimRight(string(line), "\r")
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		at := "line " + strconv.Itoa(i+1)
		name, hash, ok := strings.Cut(l, ":")
		if !ok {
			problems = append(problems, at+": not user:hash")
			continue
		}
		u := model.BasicUser{Name: name}
		switch {
		case strings.HasPrefix(hash, "{SHA}"):
			u.SHA1 = strings.TrimPrefix(hash, "{SHA}")
		case strings.HasPrefix(hash, "{PLAIN}"):
			sum := sha1.Sum([]byte(strings.TrimPrefix(hash, "{PLAIN}"))) //nolint:gosec // see the import
			u.SHA1 = base64.StdEncoding.EncodeToString(sum[:])
		default:
			problems = append(problems, at+": "+hashFormat(hash)+" is not served")
			continue
		}
		if !model.ValidBasicUser(u) {
			problems = append(problems, at+": a user name of visible ASCII without : % # \\ \" ' | ; and a {SHA} digest of 20 bytes in base64 are served, not this entry")
			continue
		}
		if seen[u.Name] {
			continue
		}
		seen[u.Name] = true
		users = append(users, u)
		if len(users) > maxUsers {
			return nil, []string{"more than " + strconv.Itoa(maxUsers) + " users"}
		}
	}
	slices.SortFunc(users, func(a, b model.BasicUser) int { return strings.Compare(a.Name, b.Name) })
	return users, problems
}

// hashFormat names an htpasswd hash's format.
func hashFormat(h string) string {
	for _, f := range []struct{ prefix, name string }{
		{"$apr1$", "apr1 (Apache MD5, htpasswd -m)"},
		{"$2y$", "bcrypt (htpasswd -B)"}, {"$2a$", "bcrypt"}, {"$2b$", "bcrypt"},
		{"$1$", "MD5-crypt"}, {"$5$", "SHA-256-crypt"}, {"$6$", "SHA-512-crypt"}, {"$y$", "yescrypt"},
		{"{SSHA}", "salted SHA-1 ({SSHA})"},
	} {
		if strings.HasPrefix(h, f.prefix) {
			return f.name
		}
	}
	return "crypt (htpasswd -d) or an unknown format"
}
