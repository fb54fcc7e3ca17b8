package web

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/coder/websocket"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/room"
)

// A client may post over the events socket it already holds instead of
// sending an HTTP request per message: the same checks, the same answer,
// without a request's parsing, headers and authentication cookie. A
// request is one text frame, its answer one "reply" frame on the same
// socket:
//
//	→ {"type":"post","req":"c1","room":"general","text":"hi","key":"…"}
//	← {"type":"reply","req":"c1","status":201,"data":{"message":…,"receipts":…}}
//	← {"type":"reply","req":"c1","status":404,"error":{"code":"not_found","message":…}}
//
// key is the Idempotency-Key of the HTTP post it stands for: a client whose
// socket drops before the reply posts again over HTTP with the same key and
// gets the first answer, never a second message.

const (
	// wsMaxInflight bounds the requests one socket has under way; one
	// more is refused at once (the reader never waits on a request, so
	// pings and the close are still read).
	wsMaxInflight = 8
	// wsReqIDMax bounds a request's id, echoed in its reply.
	wsReqIDMax = 64
)

// wsRequest is a request frame: the fields of the HTTP post's body, and
// the routing the HTTP request carries in its path and headers.
type wsRequest struct {
	Type string `json:"type"`
	Req  string `json:"req"`
	Room string `json:"room"`
	Key  string `json:"key"`
	postBody
}

// wsReply is a reply frame: status is the HTTP status the same request
// over HTTP answers with; data its body on success, error on failure.
type wsReply struct {
	Type   string `json:"type"`
	Req    string `json:"req"`
	Status int    `json:"status"`
	Data   any    `json:"data,omitempty"`
	Error  any    `json:"error,omitempty"`
}

// request reads one frame the client sent: a request is parsed and run on
// a goroutine of its own (at most wsMaxInflight at once); anything else is
// answered with an error reply. The frame was bounded by the read limit.
func (s *Server) request(c *wsConn, typ websocket.MessageType, frame []byte) {
	var in wsRequest
	err := decodeFrame(typ, frame, &in)
	if len(in.Req) > wsReqIDMax {
		// Not echoed: a reply is never much larger than its request's id.
		in.Req = ""
		if err == nil {
			err = wh.Errorf(wh.EInvalid, "req is at most %d bytes", wsReqIDMax)
		}
	}
	if err == nil && in.Type != "post" {
		err = wh.Errorf(wh.EInvalid, "unknown request type %.40q: the events socket takes \"post\" (everything else is HTTP; see docs/api.md)", in.Type)
	}
	if err != nil {
		s.reply(c, in.Req, nil, err)
		return
	}
	if c.inflight.Add(1) > wsMaxInflight {
		c.inflight.Add(-1)
		s.reply(c, in.Req, nil, wh.Errorf(wh.ERateLimited, "%d requests are already under way on this socket: wait for their replies", wsMaxInflight))
		return
	}
	if !s.startRequest() {
		c.inflight.Add(-1)
		s.reply(c, in.Req, nil, wh.Errorf(wh.EUnavailable, "the hub is shutting down: post again once it is back"))
		return
	}
	go func() {
		defer s.reqs.Done()
		data, err := s.wsPost(c, &in)
		// Counted out before the reply is queued: a client that sends its
		// next request on reading this reply finds the room for it.
		c.inflight.Add(-1)
		s.reply(c, in.Req, data, err)
	}()
}

// decodeFrame reads a request frame as decode reads an HTTP body.
func decodeFrame(typ websocket.MessageType, frame []byte, v any) error {
	if typ != websocket.MessageText {
		return wh.Errorf(wh.EInvalid, "send requests as JSON text frames")
	}
	return decodeOne(bytes.NewReader(frame), v)
}

// wsPost is POST /rooms/{room}/messages for the socket's user.
func (s *Server) wsPost(c *wsConn, in *wsRequest) (any, error) {
	// A change, once asked for, is carried out whether or not the socket
	// stays to hear the answer.
	if !c.writable {
		return nil, errCrossOrigin
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.writeTimeout())
	defer cancel()
	// The credential is checked again for every request: one that ended
	// a moment ago closes this socket soon, but posts nothing meanwhile.
	u, err := s.rooms.AuthenticateHash(ctx, c.cred)
	if err != nil {
		return nil, err
	}
	if in.Room == "" {
		return nil, wh.Errorf(wh.EInvalid, "room is required: the room's name")
	}
	if in.Key != "" {
		// The HTTP post's key: a retry of it over either path gets the
		// first answer.
		if ctx, err = room.WithIdempotencyKey(ctx, u.Name, "POST "+postPath(in.Room), in.Key); err != nil {
			return nil, err
		}
	}
	return s.post(ctx, u, in.Room, in.input())
}

// postPath is the path of the HTTP post to a room, as the server sees it
// (decoded).
func postPath(roomName string) string {
	return "/api/v1/rooms/" + roomName + "/messages"
}

// reply queues a reply on the socket, after any event already queued
// there (a post's own message event comes first).
func (s *Server) reply(c *wsConn, req string, data any, err error) {
	r := wsReply{Type: "reply", Req: req, Status: 201, Data: data}
	if err != nil {
		b := errorBody(s.log, err, "over", "the events socket", "user", c.userID)
		r.Status, r.Data, r.Error = HTTPStatus(b.Error.Code), nil, b.Error
	}
	body, merr := json.Marshal(r)
	if merr != nil {
		// Still exactly one reply: the request's, saying so.
		s.log.Error("socket reply not encoded", "err", merr)
		id, _ := json.Marshal(req)
		r.Status = http.StatusInternalServerError
		body = []byte(`{"type":"reply","req":` + string(id) + `,"status":500,"error":{"code":"` + wh.EInternal + `","message":"the hub could not encode its answer"}}`)
	}
	s.metrics.wsRequests.WithLabelValues(strconv.Itoa(r.Status)).Inc()
	// Seq 0: not an event of the log, so it does not move the client's
	// position (wswriter.go).
	c.enqueue(&chat.FeedItem{Kind: "reply", Body: body})
}

// startRequest counts a socket request in, unless the server is closing.
func (s *Server) startRequest() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.reqs.Add(1)
	return true
}

// post is the one post both the HTTP handler and the socket run.
func (s *Server) post(ctx context.Context, u *chat.User, roomName string, in room.PostInput) (map[string]any, error) {
	m, err := s.rooms.PostWith(ctx, u, roomName, in)
	if err != nil {
		return nil, err
	}
	s.metrics.posts.Inc()
	out := map[string]any{"message": m}
	if s.agents != nil && hasAgentMention(m) {
		out["receipts"] = s.agents.AwaitReceipts(ctx, m)
	}
	return out, nil
}
