package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// runSay sends the owner's words to one of the agents of the bridge running
// on this machine, over its control socket: they carry the owner's full
// authority (this machine and user are the proof, as for approve).
func runSay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	usage := "say @owner/agent TEXT… [--room ROOM] [--thread ID] [--socket PATH]"
	fs, sock := controlFlags("say", usage, stdout)
	room := fs.String("room", "", "the room the words go to (default: the room of the agent's running turn, else your DM with the agent)")
	thread := fs.Int64("thread", 0, "the `id` of the thread root the words go to (default: the running turn's thread in its room, else the channel)")
	// The handle and the words may come before or among the flags.
	var words []string
	rest := args
	for len(rest) > 0 {
		if err := parse(fs, rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		words = append(words, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(words) < 2 {
		return usageError{"name the agent and say something: wheelhouse " + usage}
	}
	owner, agent, ok := strings.Cut(strings.TrimPrefix(words[0], "@"), "/")
	if !ok || owner == "" || agent == "" {
		return usageError{fmt.Sprintf("%q is not an agent handle: write @owner/agent", words[0])}
	}
	text := strings.Join(words[1:], " ")
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rep, err := control(cctx, *sock, bridge.ControlRequest{Op: "say", Agent: agent, Text: text, Room: *room, Thread: *thread})
	if err != nil {
		return err
	}
	rc := rep.Receipt
	if rc == nil {
		return fmt.Errorf("the bridge did not say what became of the words")
	}
	what := map[string]string{wire.StatusStarted: "started turn " + cell(rc.TurnID), wire.StatusSteered: "steered turn " + cell(rc.TurnID),
		wire.StatusQueued: "queued until the running turn ends"}[rc.Status]
	if what == "" {
		what = cell(rc.Status)
		if rc.Reason != "" {
			what += " (" + cell(rc.Reason) + ")"
		}
	}
	fmt.Fprintf(stdout, "@%s/%s: %s.\n", cell(owner), cell(agent), what)
	if rc.Detail != "" {
		fmt.Fprintln(stdout, oneLine(rc.Detail, 400))
	}
	if rc.Status == wire.StatusRejected {
		return fmt.Errorf("the agent did not take the words")
	}
	return nil
}
