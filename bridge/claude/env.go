package claude

import (
	"os"
	"sort"
	"strings"
)

// passEnv are the variables of the bridge's own environment a launched
// claude inherits; everything else (the bridge's credentials among them)
// stays out. Agent env from the config is added on top.
var passEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TZ", "TMPDIR", "TERM",
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR"}

var passEnvPrefixes = []string{"LC_", "ANTHROPIC_", "CLAUDE_CODE_", "CLAUDE_CONFIG_DIR"}

// harnessEnv is the environment of a launched claude: a clean base from the
// bridge's environment, the agent's env, and the hook turned off (this
// process is steered through stdin, not the side channel).
func harnessEnv(agentEnv map[string]string) []string {
	m := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if keepEnv(k) {
			m[k] = v
		}
	}
	for k, v := range agentEnv {
		m[k] = v
	}
	m[EnvHookDisable] = "1"
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func keepEnv(k string) bool {
	for _, p := range passEnv {
		if k == p {
			return true
		}
	}
	for _, p := range passEnvPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}
