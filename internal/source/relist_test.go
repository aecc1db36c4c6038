package source

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

type failingTransport struct{ err error }

func (f failingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Body: http.NoBody}, nil
}

// A request that fails at the transport wakes the relist; an answer,
// even an error status, or a request its caller cancelled does not.
func TestOutageSeesTransportFailures(t *testing.T) {
	refused := errors.New("connection refused")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		err  error
		ctx  context.Context
		want bool
	}{
		{"refused", refused, context.Background(), true},
		{"answered 503", nil, context.Background(), false},
		{"cancelled by the caller", refused, cancelled, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOutage()
			rt := o.WrapTransport(failingTransport{tt.err})
			req, _ := http.NewRequestWithContext(tt.ctx, http.MethodGet, "https://192.0.2.1/api", nil)
			if resp, err := rt.RoundTrip(req); err == nil {
				resp.Body.Close()
			}
			got := false
			select {
			case <-o.failed:
				got = true
			default:
			}
			if got != tt.want {
				t.Errorf("reported %v, want %v", got, tt.want)
			}
		})
	}
}
