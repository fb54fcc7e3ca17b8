// Package wheelhouse holds the few types every other package shares: the one
// error type and its codes. It imports nothing of ours.
package wheelhouse

import (
	"errors"
	"fmt"
	"time"
)

// Error codes. Each maps to one HTTP status and is what clients switch on.
const (
	EInvalid         = "invalid"
	ENotFound        = "not_found"
	EForbidden       = "forbidden"
	EConflict        = "conflict"
	EUnauthenticated = "unauthenticated"
	ERateLimited     = "rate_limited"
	EUnavailable     = "unavailable"
	ETooLarge        = "too_large"
	EStorageFull     = "storage_full"
	// EUnprocessable: well-formed, but it contradicts what was sent before
	// (an Idempotency-Key reused with another body).
	EUnprocessable = "unprocessable"
	EInternal      = "internal"
)

// Error is the project's one error type. Message is written for the user and
// says what to do; Reason is an optional machine-readable detail (for example
// "not-a-member" on a rejected steer).
type Error struct {
	Code    string
	Message string
	Reason  string
	// RetryAfter, on a rate_limited error, is how long the caller should
	// wait before trying again (HTTP's Retry-After).
	RetryAfter time.Duration
	Err        error // wrapped cause, logged, never shown
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with code and a formatted user-facing message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an internal error that keeps err for the logs.
func Wrap(err error, format string, args ...any) *Error {
	return &Error{Code: EInternal, Message: fmt.Sprintf(format, args...), Err: err}
}

// ErrorCode returns the code of err, EInternal for errors that are not *Error.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err == nil {
		return ""
	}
	return EInternal
}

// ErrorMessage returns the user-facing message of err; internal errors read
// "internal error" so no detail leaks.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Code != EInternal {
		return e.Message
	}
	return "internal error"
}

// ErrorReason returns the machine-readable reason of err, if any.
func ErrorReason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// ErrorRetryAfter returns how long err says to wait before a retry (0: it
// does not say).
func ErrorRetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}
