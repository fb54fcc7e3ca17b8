package openai

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// maxSSELine bounds one line of a server-sent-event stream, and maxSSEEvent
// one event's data: a stream that sends more without a line break is broken
// or hostile.
const (
	maxSSELine  = 4 << 20
	maxSSEEvent = 8 << 20
)

// errLineTooLong is a line longer than maxSSELine.
var errLineTooLong = errors.New("a line of the event stream is longer than 4 MiB")

// sseReader reads server-sent events (the text/event-stream format): lines
// of "field: value", an event ends at a blank line, "data" lines of one
// event are joined with "\n", lines starting with ":" are comments. CR, LF
// and CRLF all end a line.
type sseReader struct {
	src        io.Reader
	buf        []byte // unread bytes are buf[start:end]
	start, end int
	err        error // from src, returned once buf is drained
	skipLF     bool  // the last line ended in CR: a next LF belongs to it

	data    bytes.Buffer
	hasData bool
	event   string
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{src: r, buf: make([]byte, 16<<10)}
}

// sseEvent is one dispatched event.
type sseEvent struct {
	Event string // the "event" field, "" for the default
	Data  []byte // the joined data lines
}

// Next returns the next event with data. At the end of the input it
// returns io.EOF, after dispatching an event that was not terminated by a
// blank line (servers that close right after their last "data:" line).
// Other read errors are returned as they are.
func (s *sseReader) Next() (sseEvent, error) {
	for {
		line, err := s.line()
		if err != nil {
			if errors.Is(err, io.EOF) && s.hasData {
				return s.dispatch(), nil
			}
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if s.hasData {
				return s.dispatch(), nil
			}
			s.event = ""
			continue
		}
		if line[0] == ':' {
			continue // comment (keep-alive)
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "data":
			if s.hasData {
				s.data.WriteByte('\n')
			}
			if s.data.Len()+len(value) > maxSSEEvent {
				return sseEvent{}, fmt.Errorf("an event of the stream is larger than %d MiB", maxSSEEvent>>20)
			}
			s.data.Write(value)
			s.hasData = true
		case "event":
			s.event = string(value)
		}
		// id, retry and unknown fields mean nothing to a chat stream.
	}
}

func (s *sseReader) dispatch() sseEvent {
	ev := sseEvent{Event: s.event, Data: append([]byte{}, s.data.Bytes()...)}
	s.data.Reset()
	s.hasData, s.event = false, ""
	return ev
}

// line returns the next line without its terminator; the slice is valid
// until the next call.
func (s *sseReader) line() ([]byte, error) {
	for {
		if s.skipLF && s.start < s.end {
			if s.buf[s.start] == '\n' {
				s.start++
			}
			s.skipLF = false
		}
		if i := bytes.IndexAny(s.buf[s.start:s.end], "\r\n"); i >= 0 {
			line := s.buf[s.start : s.start+i]
			s.skipLF = s.buf[s.start+i] == '\r'
			s.start += i + 1
			return line, nil
		}
		if s.err != nil {
			if s.start < s.end { // the last line, without a terminator
				line := s.buf[s.start:s.end]
				s.start = s.end
				return line, nil
			}
			return nil, s.err
		}
		if s.start > 0 {
			s.end = copy(s.buf, s.buf[s.start:s.end])
			s.start = 0
		}
		if s.end == len(s.buf) {
			if len(s.buf) >= maxSSELine {
				return nil, errLineTooLong
			}
			s.buf = append(s.buf, make([]byte, min(len(s.buf), maxSSELine-len(s.buf)))...)
		}
		n, err := s.src.Read(s.buf[s.end:])
		s.end += n
		if err != nil {
			s.err = err
		}
	}
}
