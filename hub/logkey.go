package hub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go/jetstream"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/eventlog"
)

// LogKeyFile holds the embedded hub's event key (eventlog.Auth) in its
// data directory, 0600: outside the log, which anyone who may publish on
// a log subject could write to. It is made on the first start of a
// version that authenticates events, with the stream's last sequence then
// as the legacy horizon (the events an earlier version appended carry no
// MAC). A cluster's key is in hub-auth.json instead.
const LogKeyFile = "event-key.json"

type logKeyFile struct {
	Key           string `json:"key"` // hex, eventlog.KeySize bytes
	LegacyHorizon uint64 `json:"legacyHorizon"`
}

// logAuth is the key the hub's events are authenticated with.
func (h *Hub) logAuth(ctx context.Context) (*eventlog.Auth, error) {
	if h.ns == nil {
		a, err := h.natsSecrets.logAuth()
		if err != nil {
			return nil, wh.Errorf(wh.EInvalid, "--nats-secrets: %v", err)
		}
		return &a, nil
	}
	path := filepath.Join(h.cfg.DataDir, LogKeyFile)
	b, err := os.ReadFile(path)
	if err == nil {
		var f logKeyFile
		if jerr := json.Unmarshal(b, &f); jerr != nil {
			return nil, wh.Errorf(wh.EInvalid, "%s is not the hub's event key file: %v (restore it from a backup of the data directory: the events it authenticated are refused without it)", path, jerr)
		}
		key, kerr := hex.DecodeString(f.Key)
		if kerr != nil || len(key) != eventlog.KeySize {
			return nil, wh.Errorf(wh.EInvalid, "%s holds no %d-byte key (restore it from a backup of the data directory: the events it authenticated are refused without it)", path, eventlog.KeySize)
		}
		return &eventlog.Auth{Key: key, LegacyHorizon: f.LegacyHorizon}, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, wh.Wrap(err, "read %s", path)
	}
	// First start with event keys: what the stream holds now is the
	// earlier version's.
	var horizon uint64
	st, err := h.opsjs.Stream(ctx, eventlog.StreamName)
	switch {
	case err == nil:
		info, err := st.Info(ctx)
		if err != nil {
			return nil, wh.Wrap(err, "read the event stream")
		}
		horizon = info.State.LastSeq
		if horizon > 0 {
			// A stream whose events already carry MACs lost its key file:
			// a new key would refuse them all on a rebuild.
			if m, err := st.GetMsg(ctx, horizon); err == nil && m.Header.Get(eventlog.MACHeader) != "" {
				return nil, wh.Errorf(wh.EInvalid, "%s is missing, but the event stream's events carry MACs made with the key it held: restore it from the data directory's backup (a new key would refuse every earlier event when the projection is rebuilt)", path)
			}
		}
	case errors.Is(err, jetstream.ErrStreamNotFound):
	default:
		return nil, wh.Wrap(err, "read the event stream")
	}
	key := make([]byte, eventlog.KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, wh.Wrap(err, "generate the event key")
	}
	out, _ := json.MarshalIndent(logKeyFile{Key: hex.EncodeToString(key), LegacyHorizon: horizon}, "", "  ")
	if err := writeFileAtomic(path, append(out, '\n')); err != nil {
		return nil, err
	}
	if horizon > 0 {
		h.log.Info("made the event key; the events already in the stream, from an earlier version, are taken without a MAC", "file", path, "legacyHorizon", horizon)
	}
	return &eventlog.Auth{Key: key, LegacyHorizon: horizon}, nil
}
