package e2e

import (
	"io"
	"net/http"
)

// headersOf sends method url with Host host (and body, nil for none)
// through c and returns the status and the response's headers, its body
// read and discarded.
func headersOf(c *http.Client, method, url, host string, body io.Reader) (int, http.Header, error) {
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return 0, nil, err
	}
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header, nil
}

// statusOf is headersOf's status.
func statusOf(c *http.Client, method, url, host string, body io.Reader) (int, error) {
	code, _, err := headersOf(c, method, url, host, body)
	return code, err
}
