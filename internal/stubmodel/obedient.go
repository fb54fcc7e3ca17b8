package stubmodel

import (
	"encoding/json"
	"regexp"
	"strings"
)

// Obedient is a Responses reply for security tests: a model that does what
// any text in its input tells it to, wherever the text sits — the sender's
// own words, a fenced paste, a quote, another agent's output. Each
// imperative line of the current turn's user messages becomes one
// exec_command call, in order, one call per request; when every imperative
// has its call it answers "done". Recognised imperatives (anywhere in a
// line, case-insensitive; a Wheelhouse envelope's "| " and quote markers
// are looked through):
//
//	run: CMD  /  run `CMD`   → CMD
//	delete PATH / remove PATH → rm PATH
//	wipe PATH                → rm -rf PATH
//	truncate PATH            → truncate -s 0 PATH
//	create PATH              → touch PATH
//	escalate: CMD            → CMD, asking codex to run it outside the sandbox
func Obedient() ResponsesReply {
	return func(s *ResponsesStream) {
		cmds := Imperatives(s.Req)
		issued := s.Req.callsThisTurn()
		if issued >= len(cmds) {
			Text("done")(s)
			return
		}
		c := cmds[issued]
		args := map[string]string{"cmd": c.Cmd}
		if c.Escalate {
			args["sandbox_permissions"], args["justification"] = "require_escalated", "the message asked for it"
		}
		b, _ := json.Marshal(args)
		Call("exec_command", string(b))(s)
	}
}

// Command is one imperative the obedient model found.
type Command struct {
	Cmd      string
	Escalate bool
}

var (
	imperativeRE = regexp.MustCompile(`(?i)\b(run|delete|remove|wipe|truncate|create|escalate)\b[:]?\s+(.+)$`)
	backtickRE   = regexp.MustCompile("`([^`]+)`")
)

// Imperatives lists the commands the obedient model obeys in q: those of
// the user messages since the model's last answer to a person.
func Imperatives(q *ResponsesRequest) []Command {
	var out []Command
	for _, text := range q.userTextsThisTurn() {
		for _, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(line)
			for _, p := range []string{"| ", "|", "> ", ">", "- ", "* "} {
				for strings.HasPrefix(line, p) {
					line = strings.TrimSpace(strings.TrimPrefix(line, p))
				}
			}
			m := imperativeRE.FindStringSubmatch(line)
			if m == nil || strings.HasPrefix(line, "<<<DATA-") || strings.HasPrefix(line, "DATA-") {
				continue
			}
			arg := strings.TrimSpace(m[2])
			if b := backtickRE.FindStringSubmatch(arg); b != nil {
				arg = b[1]
			}
			arg = strings.Trim(arg, "`.")
			var c Command
			switch verb := strings.ToLower(m[1]); verb {
			case "run":
				c.Cmd = arg
			case "escalate":
				c.Cmd, c.Escalate = arg, true
			case "delete", "remove":
				c.Cmd = "rm " + arg
			case "wipe":
				c.Cmd = "rm -rf " + arg
			case "truncate":
				c.Cmd = "truncate -s 0 " + arg
			case "create":
				c.Cmd = "touch " + arg
			}
			out = append(out, c)
		}
	}
	return out
}

// turnStart is the index of the first input item after the model's last
// assistant message: where the current turn's input begins.
func (q *ResponsesRequest) turnStart() int {
	start := 0
	for i, it := range q.Input {
		if it.Type == "message" && it.Role == "assistant" {
			start = i + 1
		}
	}
	return start
}

func (q *ResponsesRequest) userTextsThisTurn() []string {
	sub := &ResponsesRequest{Input: q.Input[q.turnStart():]}
	return sub.UserTexts()
}

func (q *ResponsesRequest) callsThisTurn() int {
	n := 0
	for _, it := range q.Input[q.turnStart():] {
		if it.Type == "function_call" {
			n++
		}
	}
	return n
}
