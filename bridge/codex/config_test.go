package codex

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	wheelhouse "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		agent   bridge.AgentConfig
		wantErr string
		check   func(t *testing.T, s settings)
	}{
		{name: "Defaults", agent: bridge.AgentConfig{Name: "a", Dir: dir}, check: func(t *testing.T, s settings) {
			// untrusted runs without a sandbox: codex would leave it after an approval anyway
			if s.binary != "codex" || s.approvalPolicy != "untrusted" || s.sandbox != "danger-full-access" || s.configuredSandbox != "" || s.dir != dir || s.codexHome != "" {
				t.Fatalf("%+v", s)
			}
			if got := strings.Join(s.args(), " "); got != "app-server --listen stdio://" {
				t.Fatalf("args %q", got)
			}
		}},
		{name: "Options", agent: bridge.AgentConfig{Name: "a", Dir: dir, Binary: "/opt/codex", Options: map[string]string{
			OptApprovalPolicy: "never", OptSandbox: "danger-full-access", OptModel: "gpt-5",
			OptCodexHome: "rel/home", OptStrictConfig: "true"}}, check: func(t *testing.T, s settings) {
			if s.binary != "/opt/codex" || s.approvalPolicy != "never" || s.sandbox != "danger-full-access" || s.model != "gpt-5" ||
				!filepath.IsAbs(s.codexHome) || !slices.Contains(s.args(), "--strict-config") {
				t.Fatalf("%+v", s)
			}
		}},
		{name: "UntrustedIgnoresSandbox", agent: bridge.AgentConfig{Name: "a", Dir: dir, Options: map[string]string{OptSandbox: "read-only"}},
			check: func(t *testing.T, s settings) {
				if s.sandbox != "danger-full-access" || s.configuredSandbox != "read-only" || s.owner() != strictPolicy {
					t.Fatalf("%+v", s)
				}
			}},
		{name: "OnRequestKeepsSandbox", agent: bridge.AgentConfig{Name: "a", Dir: dir, Options: map[string]string{OptApprovalPolicy: "on-request"}},
			check: func(t *testing.T, s settings) {
				if s.sandbox != "workspace-write" || s.owner().asksFirst() || !s.owner().sandboxed() {
					t.Fatalf("%+v", s)
				}
			}},
		{name: "ErrBadApprovalPolicy", agent: bridge.AgentConfig{Name: "a", Options: map[string]string{OptApprovalPolicy: "unlessTrusted"}},
			wantErr: "approval_policy"},
		{name: "ErrBadSandbox", agent: bridge.AgentConfig{Name: "a", Options: map[string]string{OptSandbox: "workspaceWrite"}},
			wantErr: "sandbox"},
		{name: "ErrUnknownOption", agent: bridge.AgentConfig{Name: "a", Options: map[string]string{"aproval_policy": "never"}},
			wantErr: "unknown codex option"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := resolve(tc.agent)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || wheelhouse.ErrorCode(err) != wheelhouse.EInvalid {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, s)
		})
	}
}

func TestChildEnv(t *testing.T) {
	parent := []string{"PATH=/bin", "HOME=/h", "OPENAI_API_KEY=leak", "CODEX_HOME=/parent", "WHEELHOUSE_TOKEN=secret",
		"RUST_LOG=trace", "LANG=C"}
	env := childEnv(parent, map[string]string{"OPENAI_API_KEY": "agent-key", "LANG": "C.UTF-8"}, "/agent/home")
	want := []string{"PATH=/bin", "HOME=/h", "CODEX_HOME=/agent/home", "LANG=C.UTF-8", "OPENAI_API_KEY=agent-key", "RUST_LOG=warn"}
	if strings.Join(env, " ") != strings.Join(want, " ") {
		t.Fatalf("env\n got %q\nwant %q", env, want)
	}
	if env := childEnv(parent, nil, ""); slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "CODEX_HOME=") }) {
		t.Fatalf("CODEX_HOME inherited: %q", env)
	}
}
