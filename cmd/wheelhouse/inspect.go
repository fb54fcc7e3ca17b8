package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/internal/termsafe"
	"github.com/wheelhouse-dev/wheelhouse/local"
)

func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("inspect", "inspect @owner/agent [--turn ID] [--json] [--verify [--journal FILE]] [--hub URL] [--token TOKEN]", stdout)
	hubURL := fs.String("hub", "", "the hub's `URL` (default: the one this machine's bridge paired with)")
	token := fs.String("token", "", "an API `token`: create one in the browser (your menu, API tokens) or with POST /api/v1/tokens")
	turn := fs.String("turn", "", "only this turn")
	js := fs.Bool("json", false, "print JSON")
	verify := fs.Bool("verify", false, "check the timeline's hash chain, and check it against this machine's bridge journal of the agent")
	journal := fs.String("journal", "", "the bridge journal to check against (default: this machine's journal of the agent, if any)")
	credsFlag := fs.String("credentials", "", "the bridge `credentials` whose key binds the journal (default: this machine's bridge's)")
	var handle string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		handle, args = args[0], args[1:]
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if handle == "" && fs.NArg() > 0 {
		handle = fs.Arg(0)
	}
	owner, name, ok := chat.SplitHandle(handle)
	if !ok {
		return usageError{"name the agent: wheelhouse inspect @owner/agent"}
	}
	client := &http.Client{Timeout: 30 * time.Second}
	credsPath, fromUp := credentialsPath(*credsFlag)
	var journalKey []byte
	c, err := bridge.LoadCredentials(credsPath)
	if err != nil && *credsFlag != "" {
		return err
	}
	if err == nil {
		if c.Owner == owner { // the key of another owner's bridge binds none of this agent's journal
			journalKey = bridge.JournalKey(c.Seed)
		}
		if *hubURL == "" {
			*hubURL = c.Hub
		}
		if strings.TrimRight(*hubURL, "/") == c.Hub { // trust the hub as pairing did
			if client, err = c.HTTPClient(30 * time.Second); err != nil {
				return err
			}
		}
	}
	if *hubURL == "" || *token == "" {
		return usageError{inspectNeeds(*hubURL == "", *token == "")}
	}
	u := strings.TrimRight(*hubURL, "/") + "/api/v1/agents/" + url.PathEscape(owner) + "/" + url.PathEscape(name) + "/timeline"
	if *turn != "" {
		u += "?turn=" + url.QueryEscape(*turn)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	req.Header.Set("Authorization", "Bearer "+*token)
	resp, err := client.Do(req)
	if err != nil {
		return wh.Errorf(wh.EUnavailable, "cannot reach the hub at %s: %v", *hubURL, err)
	}
	defer resp.Body.Close()
	var body struct {
		Entries []chat.TimelineEntry     `json:"entries"`
		Error   struct{ Message string } `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&body); err != nil {
		return wh.Errorf(wh.EUnavailable, "the hub's answer was not readable: %v", err)
	}
	if resp.StatusCode != 200 {
		return wh.Errorf(wh.EInvalid, "the hub said: %s", termsafe.Line(body.Error.Message))
	}
	if *verify {
		if *turn != "" {
			return usageError{"--verify checks the whole chain: drop --turn"}
		}
		journalDir := bridge.DefaultJournalDir()
		if fromUp { // the bridge `wheelhouse up` runs keeps its journals with its data
			journalDir = filepath.Join(defaultDataDir(), local.JournalDir)
		}
		return verifyTimeline(stdout, owner, name, body.Entries, *journal, journalDir, journalKey)
	}
	if *js {
		b, err := json.MarshalIndent(body.Entries, "", "  ")
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(termsafe.JSON(b), '\n'))
		return err
	}
	if len(body.Entries) == 0 {
		fmt.Fprintf(stdout, "@%s/%s has no timeline entries yet.\n", owner, name)
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tSEQ\tEVENT\tTURN\tBY\tDETAIL")
	for _, e := range body.Entries {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", e.At.Local().Format("2006-01-02 15:04:05"), e.Seq, cell(e.Kind), cell(e.TurnID), cell(at(e.Actor)), oneLine(string(e.Detail), 80))
	}
	return tw.Flush()
}

func at(s string) string {
	if s == "" {
		return ""
	}
	return "@" + s
}

func lastHash(es []chat.TimelineEntry) string {
	if len(es) == 0 {
		return "-"
	}
	return es[len(es)-1].Hash[:16]
}

// verifyTimeline checks the hub's chain, then the timeline against the
// bridge's journal of the agent when this machine has one: the journal
// catches what a chain that verifies cannot — entries rewritten with the
// later hashes recomputed, and a deleted tail.
func verifyTimeline(stdout io.Writer, owner, name string, entries []chat.TimelineEntry, journalPath, journalDir string, key []byte) error {
	problems := 0
	bad := chat.VerifyTimeline(entries)
	if bad >= 0 {
		e := entries[bad]
		problems++
		fmt.Fprintf(stdout, "BROKEN: entry %d (seq %d, %s at %s) does not match the chain: it or an earlier entry was changed\n", bad+1, e.Seq, e.Kind, e.At.Format(time.RFC3339))
	} else {
		fmt.Fprintf(stdout, "OK: %d entries, hash chain intact (last %s)\n", len(entries), lastHash(entries))
	}
	explicit := journalPath != ""
	if !explicit {
		journalPath = bridge.JournalPath(journalDir, owner, name)
	}
	jr, err := bridge.ReadJournal(journalPath)
	switch {
	case err != nil && !explicit && errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(stdout, "no bridge journal of @%s/%s on this machine (%s): only the hub's own chain was checked; run --verify on the machine that runs the agent\n", owner, name, journalPath)
	case err != nil:
		return wh.Errorf(wh.EInvalid, "cannot read the bridge journal %s: %v", journalPath, err)
	default:
		hub := make([]bridge.HubEntry, len(entries))
		for i, e := range entries {
			hub[i] = bridge.HubEntry{Seq: e.Seq, Idx: e.Idx, Kind: e.Kind, TurnID: e.TurnID, Actor: e.Actor, Detail: e.Detail, At: e.At, Prev: e.Prev, Hash: e.Hash}
		}
		found := 0
		for _, f := range bridge.CompareJournal(hub, jr, bad < 0, key, time.Now()) {
			fmt.Fprintln(stdout, sanitizeLine(f.String()))
			if f.Problem() {
				found++
			}
		}
		problems += found
		if found == 0 {
			fmt.Fprintf(stdout, "OK: the journal %s is whole (%d entries) and matches the timeline both ways: the timeline holds every entry of the journal, unchanged, and the journal every steer, approval, decision and turn of the timeline\n", journalPath, len(jr))
		}
	}
	if problems > 0 {
		return fmt.Errorf("timeline of @%s/%s failed verification: %d problem(s)", owner, name, problems)
	}
	return nil
}

// sanitizeLine keeps a line that quotes hub data to printable characters.
func sanitizeLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return '?'
		}
		return r
	}, s)
}

// inspectNeeds says which of the hub and the token inspect is missing.
func inspectNeeds(noHub, noToken bool) string {
	const token = "create an API token in the browser (your menu, API tokens)"
	switch {
	case noHub && noToken:
		return "inspect needs --hub URL and --token TOKEN (or WHEELHOUSE_HUB and WHEELHOUSE_TOKEN); " + token
	case noHub:
		return "inspect needs --hub URL (or WHEELHOUSE_HUB): this machine has no paired bridge to take it from"
	default:
		return "inspect needs --token TOKEN (or WHEELHOUSE_TOKEN): " + token
	}
}
