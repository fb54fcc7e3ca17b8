package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"unicode/utf8"

	wh "github.com/wheelhouse-dev/wheelhouse"
)

// Decode is the strict reading a message from a peer gets before it is
// validated: valid UTF-8 (invalid bytes are refused, not turned into
// U+FFFD), exactly one JSON value, no field the type does not have.
func Decode(data []byte, v any) error {
	if !utf8.Valid(data) {
		return wh.Errorf(wh.EInvalid, "the message is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return wh.Errorf(wh.EInvalid, "undecodable: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return wh.Errorf(wh.EInvalid, "trailing data after the message")
	}
	return nil
}
