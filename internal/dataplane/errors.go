package dataplane

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Classes of API errors, for errors.Is. An *APIError matches exactly one
// of them (or none, for statuses not listed).
var (
	// ErrVersionMismatch: 409, the version sent is not the current one.
	// Another writer changed the configuration: read again and retry.
	ErrVersionMismatch = errors.New("dataplane: configuration version mismatch")
	// ErrExists: 409, the object already exists.
	ErrExists = errors.New("dataplane: object already exists")
	// ErrOutdated: 406, a commit overtook the transaction.
	ErrOutdated = errors.New("dataplane: transaction outdated")
	// ErrNotFound: 404.
	ErrNotFound = errors.New("dataplane: not found")
	// ErrValidation: 400, including a configuration HAProxy refused at commit.
	ErrValidation = errors.New("dataplane: validation failed")
	// ErrSchema: 422, a request body the API's schema refuses.
	ErrSchema = errors.New("dataplane: request body refused by the schema")
	// ErrTooManyTransactions: 429, too many open transactions.
	ErrTooManyTransactions = errors.New("dataplane: too many open transactions")
	// ErrUnauthorized: 401 or 403, credentials missing or wrong.
	ErrUnauthorized = errors.New("dataplane: unauthorized")
	// ErrReloadFailed: a reload HAProxy refused (see Reload.Response).
	ErrReloadFailed = errors.New("dataplane: reload failed")
)

// APIError is an error answer of the API. Its message is the API's own;
// it never contains credentials (requests carry them only in headers).
type APIError struct {
	Method, Path string // path without the query
	Status       int
	Code         int    // the body's "code", when present
	Message      string // the body's "message", or the raw body, trimmed
}

func (e *APIError) Error() string {
	return fmt.Sprintf("dataplane: %s %s: %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), e.Message)
}

// Is classifies the error (see the Err* variables).
func (e *APIError) Is(target error) bool { return e.class() == target }

func (e *APIError) class() error {
	switch e.Status {
	case http.StatusConflict:
		// The API answers 409 both for a version mismatch and for an
		// object that exists: only the message tells them apart.
		if m := strings.ToLower(e.Message); strings.Contains(m, "version") && !strings.Contains(m, "exist") {
			return ErrVersionMismatch
		}
		return ErrExists
	case http.StatusNotAcceptable:
		return ErrOutdated
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusBadRequest:
		return ErrValidation
	case http.StatusUnprocessableEntity:
		return ErrSchema
	case http.StatusTooManyRequests:
		return ErrTooManyTransactions
	case http.StatusUnauthorized, http.StatusForbidden:
		return ErrUnauthorized
	}
	return nil
}

// ReloadError is a reload that failed; it carries the API's response
// (HAProxy's message).
type ReloadError struct {
	ID       string
	Response string
}

func (e *ReloadError) Error() string {
	msg := strings.TrimSpace(e.Response)
	if msg == "" {
		// The API's response is what its reload command printed on
		// stderr; HAProxy 2.6 writes its own message to its stderr only.
		msg = "(the API's reload command printed nothing: HAProxy's message is in HAProxy's log)"
	}
	return fmt.Sprintf("dataplane: reload %s failed: %s", e.ID, msg)
}

// Is makes errors.Is(err, ErrReloadFailed) true.
func (e *ReloadError) Is(target error) bool { return target == ErrReloadFailed }
