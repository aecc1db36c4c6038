package settings

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestCheckModeText(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want CheckMode
	}{{"auto", CheckAuto}, {"true", CheckTrue}, {"false", CheckFalse}} {
		got, err := ParseCheckMode(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseCheckMode(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
		if s := got.String(); s != tt.in || !haproxyToken.MatchString(s) {
			t.Errorf("String() = %q, want %q", s, tt.in)
		}
	}
	for _, bad := range []string{"", "Auto", "TRUE", "1", "0", "yes", "auto\n", " true"} {
		if _, err := ParseCheckMode(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseCheckMode(%q): err %v, want ErrInvalid", bad, err)
		}
	}
	if Defaults().Check != CheckAuto || CheckMode(0) != CheckAuto {
		t.Errorf("default check mode is %v, want auto (also the zero value)", Defaults().Check)
	}
	if _, err := CheckMode(9).MarshalText(); err == nil {
		t.Error("MarshalText of an invalid mode succeeded")
	}
}

// Settings are kept on disk as JSON (the controller's last-good file): the
// mode is written as a string, and the JSON booleans the releases before
// the tri-state wrote still load.
func TestCheckModeJSON(t *testing.T) {
	s := Defaults()
	s.Check = CheckFalse
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Settings
	if err := json.Unmarshal(b, &back); err != nil || back != s {
		t.Fatalf("round trip of %s: %+v, %v", b, back, err)
	}
	for _, tt := range []struct {
		json string
		want CheckMode
	}{
		{`{"Check":true}`, CheckTrue}, // older releases
		{`{"Check":false}`, CheckFalse},
		{`{"Check": true }`, CheckTrue},
		{`{"Check":"auto"}`, CheckAuto},
		{`{"Check":"true"}`, CheckTrue},
		{`{"Check":"false"}`, CheckFalse},
		{`{}`, CheckAuto},
	} {
		var got Settings
		if err := json.Unmarshal([]byte(tt.json), &got); err != nil || got.Check != tt.want {
			t.Errorf("%s: Check = %v, %v; want %v", tt.json, got.Check, err, tt.want)
		}
	}
	for _, bad := range []string{`{"Check":"yes"}`, `{"Check":1}`, `{"Check":null}`, `{"Check":"Auto"}`} {
		var got Settings
		if err := json.Unmarshal([]byte(bad), &got); err == nil {
			t.Errorf("%s: accepted as %v", bad, got.Check)
		}
	}
}
