package ingress

import (
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// ParseHTPasswd: {SHA} and {PLAIN} entries served (the first of a name
// wins, sorted by name); every other format named, never its hash; a
// name that could be map syntax refused.
func TestParseHTPasswd(t *testing.T) {
	const aliceSHA = "tiY7sUhYKUwI5L3866kDY+ENcrQ=" // "wonderland"
	for _, tc := range []struct {
		name, file string
		users      []model.BasicUser
		problems   []string // each problem contains its string
	}{
		{name: "sha", file: "# c\n\nbob:{PLAIN}wonderland\r\nalice:{SHA}" + aliceSHA + "\nalice:{SHA}hKUWhBuneltGSN4s0N/LMOpG27Q=\n",
			users: []model.BasicUser{{Name: "alice", SHA1: aliceSHA}, {Name: "bob", SHA1: aliceSHA}}},
		{name: "plain colon", file: "c:{PLAIN}a:b", users: []model.BasicUser{{Name: "c", SHA1: "3OptnM09ILoVSfbZtd3mB0IViII="}}}, // sha1("a:b")
		{name: "formats", file: "a:$apr1$x$y\nb:$2y$05$z\nc:$6$s$h\nd:{SSHA}abc\ne:abDEF12345678\nf\n",
			problems: []string{"line 1: apr1", "line 2: bcrypt", "line 3: SHA-512-crypt", "line 4: salted SHA-1", "line 5: crypt", "line 6: not user:hash"}},
		{name: "names", file: "a;b:{PLAIN}x\nc d:{PLAIN}x\n:{PLAIN}x\ng:{SHA}short\n", problems: []string{"line 1", "line 2", "line 3", "line 4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			users, problems := ParseHTPasswd([]byte(tc.file))
			if len(users) != len(tc.users) {
				t.Fatalf("users %v, want %v", users, tc.users)
			}
			for i := range users {
				if users[i] != tc.users[i] {
					t.Errorf("user %d: %v, want %v", i, users[i], tc.users[i])
				}
			}
			if len(problems) != len(tc.problems) {
				t.Fatalf("problems %q, want %q", problems, tc.problems)
			}
			for i, p := range problems {
				if !strings.Contains(p, tc.problems[i]) || strings.Contains(p, "$") {
					t.Errorf("problem %q, want one naming %q and no hash", p, tc.problems[i])
				}
			}
		})
	}
}

// FuzzHTPasswd: whatever a Secret's file holds, every user served passes
// the model's validator (no map syntax in a name, a 20-byte digest).
func FuzzHTPasswd(f *testing.F) {
	f.Add([]byte("alice:{SHA}tiY7sUhYKUwI5L3866kDY+ENcrQ=\nbob:{PLAIN}x:y\n"))
	f.Add([]byte("a b:{PLAIN}x\n|:{SHA}=\n"))
	f.Fuzz(func(t *testing.T, file []byte) {
		users, _ := ParseHTPasswd(file)
		for _, u := range users {
			if !model.ValidBasicUser(u) {
				t.Fatalf("user %q from %q", u.Name, file)
			}
		}
	})
}
