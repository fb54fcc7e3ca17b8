package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/coder/websocket"
)

// Over names how the bench posts: an HTTP request per message, or a
// request frame on the events WebSocket the client holds anyway (as the
// browser does).
const (
	OverHTTP   = "http"
	OverSocket = "socket"
)

// socketPoster is one person's events WebSocket, posting one message at a
// time: it sends a request frame and reads until that request's reply,
// passing over the events that arrive meanwhile.
type socketPoster struct {
	ws   *websocket.Conn
	next int
}

// dialPoster opens the events socket with token and waits for its ready
// frame.
func (e *env) dialPoster(ctx context.Context, token string) (*socketPoster, error) {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+token)
	ws, _, err := websocket.Dial(ctx, e.wsURL("/api/v1/events"), &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(1 << 20)
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			return nil, err
		}
		if bytes.HasPrefix(b, []byte(`{"type":"ready"`)) {
			p := &socketPoster{ws: ws}
			e.sockets = append(e.sockets, p)
			return p, nil
		}
	}
}

func (p *socketPoster) close() { p.ws.Close(websocket.StatusNormalClosure, "") }

// post posts text to a room and returns the message id, failing as
// env.post does.
func (p *socketPoster) post(ctx context.Context, roomName, text string) (uint64, error) {
	p.next++
	req := strconv.Itoa(p.next)
	frame, _ := json.Marshal(map[string]string{"type": "post", "req": req, "room": roomName, "text": text})
	if err := p.ws.Write(ctx, websocket.MessageText, frame); err != nil {
		return 0, err
	}
	for {
		_, b, err := p.ws.Read(ctx)
		if err != nil {
			return 0, err
		}
		// A reply's first field is its type; events are passed over unread.
		if !bytes.HasPrefix(b, []byte(`{"type":"reply"`)) {
			continue
		}
		var rep struct {
			Req    string          `json:"req"`
			Status int             `json:"status"`
			Data   json.RawMessage `json:"data"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			return 0, fmt.Errorf("post: %w", err)
		}
		if rep.Req != req {
			continue
		}
		if rep.Status != http.StatusCreated {
			return 0, fmt.Errorf("post: %d: %s", rep.Status, rep.Error)
		}
		return postAnswer(rep.Data)
	}
}
