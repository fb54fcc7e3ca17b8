package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"time"

	"github.com/nats-io/nats.go"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// fileTimeout bounds streaming one file to a bridge.
const fileTimeout = 2 * time.Minute

// steerFiles names a message's files for the agent's bridge: a small text
// file inline (the envelope fences it as data), the others for the bridge
// to fetch (KindFile) into the message's folder.
func (l *Link) steerFiles(ctx context.Context, fs []chat.File) []wire.FileRef {
	var out []wire.FileRef
	inline := 0
	for _, f := range fs {
		ref := wire.FileRef{ID: f.ID, Name: f.Name, Type: f.Type, Size: f.Size}
		// The digest recorded at upload: the bridge checks the bytes against
		// it, and an owner's forward names it.
		if sf, err := l.rooms.FileByID(ctx, f.ID); err == nil {
			ref.SHA256 = sf.SHA256
		} else {
			l.log.Warn("reading a file's record for a steer failed", "file", f.ID, "err", err)
		}
		if inline+int(f.Size) <= wire.MaxInlineTotal {
			text, ok, err := l.rooms.FileText(ctx, f, wire.MaxInlineFile)
			if err != nil {
				l.log.Warn("reading a file for a steer failed; the bridge fetches it", "file", f.ID, "err", err)
			}
			if ok {
				ref.Inline, ref.Text = true, text
				inline += len(text)
			}
		}
		out = append(out, ref)
	}
	return out
}

// serveFile answers a bridge's FileRequest on its reply inbox: the file in
// chunks, then a last message with its SHA-256. Only a file posted with
// the message of a steer of this bridge's agent is served.
func (l *Link) serveFile(b *chat.Bridge, m *nats.Msg, req wire.FileRequest) {
	to := l.replyTo(b.ID, m)
	if to == "" {
		return
	}
	fail := func(err error) { l.fileError(b.ID, m, err) }
	ctx, cancel := context.WithTimeout(context.Background(), fileTimeout)
	defer cancel()
	f, rc, err := l.rooms.SteerFileBytes(ctx, b.ID, req.SteerID, req.FileID)
	if wh.ErrorCode(err) == wh.EForbidden && l.readAgain(ctx) {
		// The router delivers a steer once this node has decided it, before
		// its commit: the bridge may ask for the message's files before the
		// message is readable here.
		f, rc, err = l.rooms.SteerFileBytes(ctx, b.ID, req.SteerID, req.FileID)
	}
	if err != nil {
		l.log.Warn("refused a bridge's file request", "bridge", b.ID, "steer", req.SteerID, "file", req.FileID, "err", err)
		fail(err)
		return
	}
	defer rc.Close()
	h := sha256.New()
	buf := make([]byte, wire.FileChunk)
	for {
		n, err := io.ReadFull(rc, buf)
		if n > 0 {
			h.Write(buf[:n])
			msg := nats.NewMsg(to)
			msg.Data = append([]byte(nil), buf[:n]...)
			if perr := l.nc.PublishMsg(msg); perr != nil {
				l.log.Warn("streaming a file to a bridge failed", "bridge", b.ID, "file", f.ID, "err", perr)
				return
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			fail(wh.Errorf(wh.EUnavailable, "reading the file failed"))
			return
		}
	}
	done := nats.NewMsg(to)
	done.Header.Set(wire.FileDoneHeader, hex.EncodeToString(h.Sum(nil)))
	l.nc.PublishMsg(done)
}

// fileError answers bridge id's file request with why not.
func (l *Link) fileError(id string, m *nats.Msg, err error) {
	to := l.replyTo(id, m)
	if to == "" {
		return
	}
	msg := nats.NewMsg(to)
	msg.Header.Set(wire.FileErrorHeader, wh.ErrorMessage(err))
	l.nc.PublishMsg(msg)
}
