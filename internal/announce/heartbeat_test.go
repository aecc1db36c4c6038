package announce

import (
	"errors"
	"net/netip"
	"testing"
)

func TestHeartbeatSealOpen(t *testing.T) {
	key := []byte("group key")
	hb := Heartbeat{Host: "lb1", Epoch: 7, Seq: 3, Healthy: true,
		Claims: []Claim{{netip.MustParseAddr("192.0.2.10"), Hold{2, 3}}, {netip.MustParseAddr("2001:db8::10"), Hold{1, 2}}}}
	got, b := sealOpen(t, hb, key)
	if got.Host != hb.Host || got.Seq != 3 || got.Epoch != 7 || !got.Healthy || len(got.Claims) != 2 || got.Claims[1] != hb.Claims[1] {
		t.Fatalf("opened %+v, want %+v", got, hb)
	}
	tampered := append([]byte{}, b...)
	tampered[10] ^= 1
	forged, _ := Seal(hb, []byte("another key"))
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"another key", forged, ErrBadMAC},
		{"a byte changed", tampered, ErrBadMAC},
		{"cut short", b[:len(b)-1], ErrBadMAC},
		{"too short", b[:10], ErrMalformed},
		{"no magic", append([]byte("XXXX"), b[4:]...), ErrMalformed},
	}
	for _, tc := range cases {
		if _, err := Open(tc.b, key); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	noHost, _ := Seal(Heartbeat{Seq: 1}, key)
	if _, err := Open(noHost, key); !errors.Is(err, ErrMalformed) {
		t.Errorf("no host: %v, want ErrMalformed", err)
	}
}

// sealOpen seals hb with key and opens it again, failing t on an error;
// it returns what was opened and the sealed bytes.
func sealOpen(t *testing.T, hb Heartbeat, key []byte) (Heartbeat, []byte) {
	t.Helper()
	b, err := Seal(hb, key)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Open(b, key)
	if err != nil {
		t.Fatal(err)
	}
	return got, b
}
