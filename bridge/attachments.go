package bridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// DefaultMaxFetch bounds one file a bridge fetches for an agent.
const DefaultMaxFetch = 64 << 20

// attachments gets a steer's files ready for its envelope: a text file the
// hub sent inline stays inline (fenced as data); any other is fetched from
// the hub (for this steer only) into the message's folder, and the envelope
// names where. A file that cannot be fetched is listed with why.
func (r *runner) attachments(st wire.Steer) []authz.Attachment {
	if len(st.Files) == 0 {
		return nil
	}
	out := make([]authz.Attachment, 0, len(st.Files))
	var dir string
	var dirErr error
	used := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), r.b.cfg.CallTimeout)
	defer cancel()
	for _, f := range st.Files {
		a := authz.Attachment{Name: f.Name, Type: f.Type, Size: f.Size}
		switch {
		case f.Inline:
			a.Inline, a.Text = true, f.Text
		case f.Size > r.b.maxFetch():
			a.Missing = fmt.Sprintf("it is larger than the %d bytes this bridge fetches", r.b.maxFetch())
		default:
			if dir == "" && dirErr == nil {
				dir, dirErr = r.b.attachmentDir(r.b.cfg.Creds.Owner, r.cfg.Name, st.ID)
			}
			if dirErr != nil {
				a.Missing = "the bridge could not make a folder for it"
				r.b.log.Warn("making an attachment folder failed", "agent", r.cfg.Name, "err", dirErr)
				break
			}
			path := filepath.Join(dir, diskName(f.Name, used))
			if err := r.b.fetchFile(ctx, st.ID, f, path); err != nil {
				a.Missing = "fetching it from the hub failed"
				r.b.log.Warn("fetching an attachment failed", "agent", r.cfg.Name, "steer", st.ID, "file", f.ID, "err", err)
				break
			}
			a.Path = path
		}
		out = append(out, a)
	}
	return out
}

func (b *Bridge) maxFetch() int64 {
	if b.cfg.MaxFetch > 0 {
		return b.cfg.MaxFetch
	}
	return DefaultMaxFetch
}

// attachmentDir makes (0700) and returns the folder of one message's files
// for one agent: <attachments>/<owner>/<agent>/<steer id>.
func (b *Bridge) attachmentDir(owner, agent, steerID string) (string, error) {
	b.attachMu.Lock()
	if b.attachDir == "" {
		if b.cfg.AttachmentsDir != "" {
			b.attachDir = b.cfg.AttachmentsDir
		} else {
			d, err := os.MkdirTemp("", "wheelhouse-attachments-")
			if err != nil {
				b.attachMu.Unlock()
				return "", err
			}
			b.attachDir, b.attachTemp = d, true
		}
	}
	root := b.attachDir
	b.attachMu.Unlock()
	dir := filepath.Join(root, diskName(owner, nil), diskName(agent, nil), diskName(steerID, nil))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return dir, nil
}

// removeTempAttachments removes the temporary attachments folder.
func (b *Bridge) removeTempAttachments() {
	b.attachMu.Lock()
	defer b.attachMu.Unlock()
	if b.attachTemp {
		os.RemoveAll(b.attachDir)
		b.attachDir, b.attachTemp = "", false
	}
}

// diskName makes a name from the hub safe as one path element: letters,
// digits, '.', '_', '-' and ' ', no leading dot, at most 100 bytes, and not
// one already used in the folder.
func diskName(name string, used map[string]bool) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '.', r == '_', r == '-', r == ' ':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 100 {
			break
		}
	}
	out := strings.TrimLeft(strings.TrimSpace(b.String()), ".")
	if out == "" {
		out = "file"
	}
	if used != nil {
		base, n := out, 1
		for used[out] {
			n++
			out = fmt.Sprintf("%d-%s", n, base)
		}
		used[out] = true
	}
	return out
}

// fetchFile asks the hub for a file posted with steer steerID and writes it
// to path (0600), checking its size and SHA-256.
func (b *Bridge) fetchFile(ctx context.Context, steerID string, f wire.FileRef, path string) error {
	inbox := b.nc.NewInbox()
	sub, err := b.nc.SubscribeSync(inbox)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	sub.SetPendingLimits(-1, int(b.maxFetch())+1<<20)
	req, _ := json.Marshal(wire.FileRequest{SteerID: steerID, FileID: f.ID})
	if err := b.nc.PublishMsg(&nats.Msg{Subject: wire.FromBridge(b.cfg.Creds.BridgeID, wire.KindFile), Reply: inbox, Data: req}); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".fetch-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := sha256.New()
	var n int64
	for {
		wait := 30 * time.Second
		if d, ok := ctx.Deadline(); ok {
			wait = time.Until(d)
		}
		m, err := sub.NextMsg(wait)
		if err != nil {
			if errors.Is(err, nats.ErrTimeout) {
				return fmt.Errorf("the hub did not send the file in time")
			}
			return err
		}
		if why := m.Header.Get(wire.FileErrorHeader); why != "" {
			return fmt.Errorf("the hub refused: %s", why)
		}
		if sum := m.Header.Get(wire.FileDoneHeader); sum != "" {
			got := hex.EncodeToString(h.Sum(nil))
			if n != f.Size || got != sum {
				return fmt.Errorf("the file arrived damaged (%d of %d bytes)", n, f.Size)
			}
			if f.SHA256 != "" && got != f.SHA256 {
				return fmt.Errorf("the hub sent other bytes than the file the message posted (SHA-256 %.12s…, not %.12s…)", got, f.SHA256)
			}
			if err := tmp.Close(); err != nil {
				return err
			}
			return os.Rename(tmp.Name(), path)
		}
		n += int64(len(m.Data))
		if n > f.Size {
			return fmt.Errorf("the hub sent more than the file's %d bytes", f.Size)
		}
		h.Write(m.Data)
		if _, err := tmp.Write(m.Data); err != nil {
			return err
		}
	}
}
