package settings

import (
	"bytes"
	"encoding/json"
)

// CheckMode is the value of the check setting: whether the servers of a
// Service get a health check of their own, on the port traffic goes to.
// Its zero value is CheckAuto.
type CheckMode uint8

const (
	// CheckAuto lets the controller choose (internal/desired decides):
	// in node mode, servers that follow their node inherit the node
	// check when there is one, and are checked by themselves otherwise;
	// in pod mode, they are checked by themselves.
	CheckAuto CheckMode = iota
	// CheckTrue: every server is checked by itself.
	CheckTrue
	// CheckFalse: no server is checked by itself.
	CheckFalse
)

var checkModes = [...]string{CheckAuto: "auto", CheckTrue: "true", CheckFalse: "false"}

// String is auto, true or false ([a-z0-9]+, as every setting renders).
func (m CheckMode) String() string {
	if int(m) < len(checkModes) {
		return checkModes[m]
	}
	return "invalid"
}

// ParseCheckMode accepts exactly auto, true or false.
func ParseCheckMode(v string) (CheckMode, error) {
	for m, s := range checkModes {
		if v == s {
			return CheckMode(m), nil
		}
	}
	return CheckAuto, reasonError("want auto, true or false")
}

// MarshalText writes the mode as String does.
func (m CheckMode) MarshalText() ([]byte, error) {
	if int(m) >= len(checkModes) {
		return nil, reasonError("invalid check mode")
	}
	return []byte(m.String()), nil
}

// UnmarshalText reads what MarshalText writes.
func (m *CheckMode) UnmarshalText(b []byte) error {
	v, err := ParseCheckMode(string(b))
	if err == nil {
		*m = v
	}
	return err
}

// UnmarshalJSON reads a JSON string ("auto", "true", "false"), and also
// the JSON booleans the releases before CheckMode wrote (a last-good
// settings file on disk holds "Check": true or false).
func (m *CheckMode) UnmarshalJSON(b []byte) error {
	switch string(bytes.TrimSpace(b)) {
	case "true":
		*m = CheckTrue
		return nil
	case "false":
		*m = CheckFalse
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	return m.UnmarshalText([]byte(s))
}
