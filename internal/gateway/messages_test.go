package gateway

import (
	"strings"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// A value the user wrote appears quoted in a condition's message, so that
// nothing in it (a newline, a colon) reads as part of the message: issue
// 28.
func TestMessagesQuoteUserValues(t *testing.T) {
	for _, tc := range []struct {
		name     string
		protocol gwv1.ProtocolType
		want     string // a substring of the listener's Accepted message
	}{
		{"plain", "SCTP", `protocol "SCTP" is not supported`},
		{"a newline", "SCTP\nAccepted: True", `protocol "SCTP\nAccepted: True" is not supported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			in.Gateways[0].Spec.Listeners = []gwv1.Listener{listenerOf("x", tc.protocol, 1111, "")}
			res := Compute(in, Options{})
			var msg string
			for _, c := range listenerStatus(res, "apps", "gw", "x").Conditions {
				if c.Type == "Accepted" {
					msg = c.Message
				}
			}
			if !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("Accepted: %q, want it to hold %q and no newline", msg, tc.want)
			}
		})
	}
}
