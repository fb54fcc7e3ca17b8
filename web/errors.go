package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
)

// HTTPStatus maps an error code to its HTTP status.
func HTTPStatus(code string) int {
	switch code {
	case wh.EInvalid:
		return http.StatusBadRequest
	case wh.ETooLarge:
		return http.StatusRequestEntityTooLarge
	case wh.ENotFound:
		return http.StatusNotFound
	case wh.EForbidden:
		return http.StatusForbidden
	case wh.EConflict:
		return http.StatusConflict
	case wh.EUnauthenticated:
		return http.StatusUnauthorized
	case wh.ERateLimited:
		return http.StatusTooManyRequests
	case wh.EUnavailable:
		return http.StatusServiceUnavailable
	case wh.EStorageFull:
		return http.StatusInsufficientStorage
	case wh.EUnprocessable:
		return http.StatusUnprocessableEntity
	default:
		return http.StatusInternalServerError
	}
}

// ErrorBody is the JSON every error answers with.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Reason  string `json:"reason,omitempty"`
		// RetryAfter (seconds) is on rate_limited answers, as the
		// Retry-After header is.
		RetryAfter int `json:"retryAfter,omitempty"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	b := errorBody(log, err, "method", r.Method, "path", r.URL.Path)
	if b.Error.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(b.Error.RetryAfter))
	}
	writeJSON(w, HTTPStatus(b.Error.Code), b)
}

// errorBody is the answer to a failed request (over HTTP or the events
// socket); an internal failure is logged, and so is a write the hub
// cannot take now, with where it came from.
func errorBody(log *slog.Logger, err error, where ...any) ErrorBody {
	code := wh.ErrorCode(err)
	switch code {
	case wh.EInternal:
		log.Error("request failed", append(where, "err", err)...)
	case wh.EUnavailable, wh.EStorageFull:
		log.Warn("request refused: the hub cannot take writes now", append(where, "err", err)...)
	}
	var b ErrorBody
	b.Error.Code = code
	b.Error.Message = wh.ErrorMessage(err)
	b.Error.Reason = wh.ErrorReason(err)
	if code == wh.ERateLimited {
		b.Error.RetryAfter = authz.RetryAfterSeconds(wh.ErrorRetryAfter(err))
	}
	return b
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	enc.Encode(v)
}

// MaxBodyBytes bounds every JSON request body.
const MaxBodyBytes = 64 << 10

// decode reads exactly one JSON object into v, refusing unknown fields,
// wrong types, trailing data and bodies over MaxBodyBytes, with errors that
// name the problem.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return wh.Errorf(wh.EInvalid, "send a JSON body with Content-Type: application/json (got %q)", ct)
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	return decodeOne(r.Body, v)
}

// decodeOne reads exactly one JSON object from rd into v (an HTTP body or
// a socket's request frame), with decode's refusals and errors.
func decodeOne(rd io.Reader, v any) error {
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return wh.Errorf(wh.EInvalid, "the body must hold exactly one JSON object")
	}
	return nil
}

func decodeError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return &wh.Error{Code: wh.ETooLarge, Message: fmt.Sprintf("the request body is larger than %d KiB", MaxBodyBytes>>10)}
	case errors.As(err, &syn):
		return wh.Errorf(wh.EInvalid, "malformed JSON at byte %d: %v", syn.Offset, err)
	case errors.As(err, &typ):
		return wh.Errorf(wh.EInvalid, "field %q must be a %s, not %s", typ.Field, typ.Type, typ.Value)
	case errors.Is(err, io.EOF):
		return wh.Errorf(wh.EInvalid, "the request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return wh.Errorf(wh.EInvalid, "malformed JSON: the body ends early")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return wh.Errorf(wh.EInvalid, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	default:
		return wh.Errorf(wh.EInvalid, "malformed JSON: %v", err)
	}
}
