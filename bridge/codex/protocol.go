package codex

import "encoding/json"

// Wire shapes of the codex app-server protocol (codex-cli 0.171.0), only the
// fields this adapter reads or writes. Unknown fields are ignored on decode.
// See docs/harness-codex.md and `codex app-server generate-json-schema`.

// Client → server methods.
const (
	methodInitialize    = "initialize"
	methodInitialized   = "initialized"
	methodThreadStart   = "thread/start"
	methodThreadResume  = "thread/resume"
	methodTurnStart     = "turn/start"
	methodTurnSteer     = "turn/steer"
	methodTurnInterrupt = "turn/interrupt"
	// methodSettingsUpdate changes the thread's approval policy and sandbox
	// for the turns that follow (experimental API).
	methodSettingsUpdate = "thread/settings/update"
)

// Server → client notifications we act on.
const (
	noteTurnStarted     = "turn/started"
	noteTurnCompleted   = "turn/completed"
	noteItemStarted     = "item/started"
	noteItemCompleted   = "item/completed"
	noteAgentDelta      = "item/agentMessage/delta"
	noteError           = "error"
	noteRequestResolved = "serverRequest/resolved"
	// noteSettingsUpdated confirms a change of the thread's settings; it
	// comes only when they changed (experimental API).
	noteSettingsUpdated = "thread/settings/updated"
	// noteRawItem carries the model's own items (experimentalRawEvents):
	// every function_call with its arguments, and every function_call_output,
	// including those of calls codex refused and never made an item of.
	noteRawItem = "rawResponseItem/completed"
)

// Server → client requests we answer.
const (
	reqCommandApproval    = "item/commandExecution/requestApproval"
	reqFileChangeApproval = "item/fileChange/requestApproval"
)

// Notifications we never use; asking codex not to send them keeps the pipe quiet.
var optOutNotifications = []string{
	"item/commandExecution/outputDelta",
	"item/reasoning/summaryTextDelta",
	"item/reasoning/textDelta",
	"account/rateLimits/updated",
	"thread/tokenUsage/updated",
}

type clientInfo struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	Version string `json:"version"`
}

type initializeParams struct {
	ClientInfo   clientInfo `json:"clientInfo"`
	Capabilities struct {
		ExperimentalAPI           bool     `json:"experimentalApi"`
		OptOutNotificationMethods []string `json:"optOutNotificationMethods,omitempty"`
	} `json:"capabilities"`
}

type threadParams struct {
	ThreadID       string `json:"threadId,omitempty"` // thread/resume only
	Cwd            string `json:"cwd,omitempty"`
	ApprovalPolicy string `json:"approvalPolicy,omitempty"`
	Sandbox        string `json:"sandbox,omitempty"`
	Model          string `json:"model,omitempty"`
	ExcludeTurns   bool   `json:"excludeTurns,omitempty"` // thread/resume only
	// Config overrides codex's config for this thread; the adapter marks
	// the project untrusted so codex never reads its .codex folder (rules,
	// config) and never records the project as trusted.
	Config map[string]any `json:"config,omitempty"`
	// ExperimentalRawEvents turns on noteRawItem (thread/start only).
	ExperimentalRawEvents bool `json:"experimentalRawEvents,omitempty"`
}

type threadResult struct {
	Thread struct {
		ID string `json:"id"`
	} `json:"thread"`
	ApprovalPolicy json.RawMessage `json:"approvalPolicy"`
	Sandbox        json.RawMessage `json:"sandbox"`
}

type settingsUpdateParams struct {
	ThreadID       string `json:"threadId"`
	ApprovalPolicy string `json:"approvalPolicy"`
	SandboxPolicy  any    `json:"sandboxPolicy"`
}

type settingsNote struct {
	ThreadID       string `json:"threadId"`
	ThreadSettings struct {
		ApprovalPolicy json.RawMessage `json:"approvalPolicy"`
		SandboxPolicy  json.RawMessage `json:"sandboxPolicy"`
	} `json:"threadSettings"`
}

// rawItemNote is a noteRawItem; only function calls and their outputs are
// decoded.
type rawItemNote struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	Item     struct {
		Type      string          `json:"type"` // function_call, function_call_output, message, ...
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		CallID    string          `json:"call_id"`
		Output    json.RawMessage `json:"output"`
	} `json:"item"`
}

// execArgs are the exec_command arguments that decide where it runs.
type execArgs struct {
	Cmd                string `json:"cmd"`
	SandboxPermissions string `json:"sandbox_permissions"` // use_default | require_escalated | with_additional_permissions
	Justification      string `json:"justification"`
}

// userInput is one element of turn/start and turn/steer "input".
type userInput struct {
	Type         string `json:"type"` // "text"
	Text         string `json:"text"`
	TextElements []any  `json:"text_elements"`
}

func textInput(s string) []userInput {
	return []userInput{{Type: "text", Text: s, TextElements: []any{}}}
}

type turnStartParams struct {
	ThreadID string      `json:"threadId"`
	Input    []userInput `json:"input"`
}

type turnStartResult struct {
	Turn turnInfo `json:"turn"`
}

type turnSteerParams struct {
	ThreadID       string      `json:"threadId"`
	ExpectedTurnID string      `json:"expectedTurnId"`
	Input          []userInput `json:"input"`
}

type turnInterruptParams struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
}

type turnInfo struct {
	ID     string     `json:"id"`
	Status string     `json:"status"` // inProgress | completed | interrupted | failed
	Error  *turnError `json:"error"`
}

type turnError struct {
	Message           string  `json:"message"`
	AdditionalDetails *string `json:"additionalDetails"`
}

type turnNote struct {
	ThreadID string   `json:"threadId"`
	Turn     turnInfo `json:"turn"`
}

// threadItem is the union of item types; Type says which fields apply.
type threadItem struct {
	Type string `json:"type"` // agentMessage, commandExecution, fileChange, ...
	ID   string `json:"id"`
	// agentMessage
	Text string `json:"text"`
	// commandExecution
	Command          string  `json:"command"`
	Cwd              string  `json:"cwd"`
	AggregatedOutput *string `json:"aggregatedOutput"`
	ExitCode         *int    `json:"exitCode"`
	// commandExecution, fileChange: inProgress | completed | failed | declined
	Status string `json:"status"`
	// fileChange
	Changes []fileUpdate `json:"changes"`
}

type fileUpdate struct {
	Path string `json:"path"`
	Kind struct {
		Type     string  `json:"type"` // add | delete | update
		MovePath *string `json:"move_path"`
	} `json:"kind"`
	Diff string `json:"diff"`
}

type itemNote struct {
	Item     threadItem `json:"item"`
	ThreadID string     `json:"threadId"`
	TurnID   string     `json:"turnId"`
}

type deltaNote struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	ItemID   string `json:"itemId"`
	Delta    string `json:"delta"`
}

type errorNote struct {
	Error     turnError `json:"error"`
	WillRetry bool      `json:"willRetry"`
	ThreadID  string    `json:"threadId"`
	TurnID    string    `json:"turnId"`
}

type resolvedNote struct {
	ThreadID  string          `json:"threadId"`
	RequestID json.RawMessage `json:"requestId"`
}

type commandApprovalParams struct {
	ThreadID               string          `json:"threadId"`
	TurnID                 string          `json:"turnId"`
	ItemID                 string          `json:"itemId"`
	Kind                   string          `json:"kind"` // command | writeStdin | humanCommand
	Command                *string         `json:"command"`
	Cwd                    *string         `json:"cwd"`
	Reason                 *string         `json:"reason"`
	NetworkApprovalContext json.RawMessage `json:"networkApprovalContext"`
}

type fileChangeApprovalParams struct {
	ThreadID  string  `json:"threadId"`
	TurnID    string  `json:"turnId"`
	ItemID    string  `json:"itemId"`
	Reason    *string `json:"reason"`
	GrantRoot *string `json:"grantRoot"`
}

// approvalDecision is our whole answer vocabulary: never acceptForSession,
// never an exec-policy amendment, so one grant covers exactly one call.
type approvalDecision struct {
	Decision string `json:"decision"` // accept | decline
}
