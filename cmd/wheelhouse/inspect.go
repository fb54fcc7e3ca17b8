package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/termsafe"
	"github.com/wheelhouse-dev/wheelhouse/room"
)

func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("inspect", "inspect @owner/agent [--turn ID] [--json] [--verify] [--hub URL] [--token TOKEN]", stderr)
	hubURL := fs.String("hub", "", "the hub's URL (default: the one this machine's bridge paired with)")
	token := fs.String("token", "", "an API token (POST /api/v1/tokens)")
	turn := fs.String("turn", "", "only this turn")
	js := fs.Bool("json", false, "print JSON")
	verify := fs.Bool("verify", false, "check the timeline's hash chain and report the first break")
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
	owner, name, ok := room.SplitHandle(handle)
	if !ok {
		return usageError{"name the agent: wheelhouse inspect @owner/agent"}
	}
	if *hubURL == "" {
		if c, err := bridge.LoadCredentials(bridge.DefaultCredentialsPath()); err == nil {
			*hubURL = c.Hub
		}
	}
	if *hubURL == "" || *token == "" {
		return usageError{"inspect needs --hub URL and --token TOKEN (or WHEELHOUSE_HUB and WHEELHOUSE_TOKEN); create a token with POST /api/v1/tokens"}
	}
	u := strings.TrimRight(*hubURL, "/") + "/api/v1/agents/" + url.PathEscape(owner) + "/" + url.PathEscape(name) + "/timeline"
	if *turn != "" {
		u += "?turn=" + url.QueryEscape(*turn)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	req.Header.Set("Authorization", "Bearer "+*token)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return wh.Errorf(wh.EUnavailable, "cannot reach the hub at %s: %v", *hubURL, err)
	}
	defer resp.Body.Close()
	var body struct {
		Entries []room.TimelineEntry     `json:"entries"`
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
		if bad := room.VerifyTimeline(body.Entries); bad >= 0 {
			e := body.Entries[bad]
			fmt.Fprintf(stdout, "BROKEN: entry %d (seq %d, %s at %s) does not match the chain: it or an earlier entry was changed\n", bad+1, e.Seq, cell(e.Kind), e.At.Format(time.RFC3339))
			return fmt.Errorf("timeline of @%s/%s failed verification at seq %d", owner, name, e.Seq)
		}
		fmt.Fprintf(stdout, "OK: %d entries, hash chain intact (last %s)\n", len(body.Entries), cell(lastHash(body.Entries)))
		return nil
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

func lastHash(es []room.TimelineEntry) string {
	if len(es) == 0 {
		return "-"
	}
	return es[len(es)-1].Hash[:16]
}
