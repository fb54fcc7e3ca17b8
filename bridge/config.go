package bridge

import (
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/BurntSushi/toml"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// FileConfig is the bridge config file (TOML); see docs/bridge.example.toml.
type FileConfig struct {
	// Credentials is the file `wheelhouse bridge pair` wrote (default: the
	// user's config dir).
	Credentials string        `toml:"credentials"`
	Agents      []AgentConfig `toml:"agent"`
}

// AgentConfig declares one agent in the bridge config file.
type AgentConfig struct {
	Name    string            `toml:"name"`
	Harness string            `toml:"harness"` // demo, exec, codex, claude, claude-attach
	Dir     string            `toml:"dir"`     // working directory / project dir
	Command []string          `toml:"command"` // exec: argv; an arg "{prompt}" is replaced by the text, else the text goes to stdin
	Binary  string            `toml:"binary"`  // codex/claude: path to the binary (default from PATH)
	Env     map[string]string `toml:"env"`     // extra environment for the harness process
	Options map[string]string `toml:"options"` // harness-specific (codex: approval_policy, sandbox, codex_home, model)
	// PolicyFile is the owner's policy as written; Policy is the effective
	// policy the bridge hands the harness (filled by New).
	PolicyFile PolicyConfig `toml:"policy"`
	Policy     wire.Policy  `toml:"-"`
	// Rooms are the rooms the owner lets the agent act in from this
	// machine, with each room's ceiling ("normal", "ask", "read-only";
	// "" is normal). More come from the owner's signed consent.
	Rooms map[string]string `toml:"rooms"`
}

// PolicyConfig is the owner's policy as written in the config file.
type PolicyConfig struct {
	Address         string   `toml:"address"` // owner (default), users, members
	Allowed         []string `toml:"allowed"`
	Steering        *bool    `toml:"steering"`
	MaxSteers       *int     `toml:"max_steers"`
	Grace           string   `toml:"grace"`
	StartOnEnded    *bool    `toml:"start_on_ended"`
	MaxAge          string   `toml:"max_age"`
	ApprovalTimeout string   `toml:"approval_timeout"`
	AutoApprove     []string `toml:"auto_approve"`
}

// Policy converts the file form to the wire form, over the defaults.
func (p PolicyConfig) Policy() (wire.Policy, error) {
	out := wire.DefaultPolicy()
	if p.Address != "" {
		out.Address = p.Address
	}
	out.Allowed = p.Allowed
	if p.Steering != nil {
		out.Steering = *p.Steering
	}
	if p.MaxSteers != nil {
		out.MaxSteers = *p.MaxSteers
	}
	if p.StartOnEnded != nil {
		out.StartOnEnded = *p.StartOnEnded
	}
	out.AutoApprove = p.AutoApprove
	for _, d := range []struct {
		s   string
		dst *wire.Duration
		key string
	}{{p.Grace, &out.Grace, "grace"}, {p.MaxAge, &out.MaxAge, "max_age"}, {p.ApprovalTimeout, &out.ApprovalTTL, "approval_timeout"}} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil || v < 0 {
			return out, wh.Errorf(wh.EInvalid, "policy.%s = %q: want a duration such as \"30s\" or \"10m\"", d.key, d.s)
		}
		*d.dst = wire.Duration(v)
	}
	switch out.Address {
	case wire.AddressOwner, wire.AddressUsers, wire.AddressMembers, wire.AddressModerate:
	default:
		return out, wh.Errorf(wh.EInvalid, "policy.address = %q: want owner, users, moderate or members", out.Address)
	}
	if out.MaxSteers < 0 {
		return out, wh.Errorf(wh.EInvalid, "policy.max_steers must be 0 (unlimited) or more")
	}
	return out, nil
}

// LoadConfig reads and validates a bridge config file.
func LoadConfig(path string) (*FileConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, wh.Errorf(wh.EInvalid, "read bridge config: %v", err)
	}
	return ParseConfig(string(b))
}

// ParseConfig parses and validates bridge config text.
func ParseConfig(text string) (*FileConfig, error) {
	var c FileConfig
	md, err := toml.Decode(text, &c)
	if err != nil {
		return nil, wh.Errorf(wh.EInvalid, "bridge config: %v", err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, wh.Errorf(wh.EInvalid, "bridge config: unknown key %s", und[0])
	}
	seen := map[string]bool{}
	for i, a := range c.Agents {
		if a.Name == "" || a.Harness == "" {
			return nil, wh.Errorf(wh.EInvalid, "bridge config: agent %d needs a name and a harness", i+1)
		}
		if seen[a.Name] {
			return nil, wh.Errorf(wh.EInvalid, "bridge config: two agents are named %q", a.Name)
		}
		seen[a.Name] = true
		if _, err := a.PolicyFile.Policy(); err != nil {
			return nil, fmt.Errorf("agent %q: %w", a.Name, err)
		}
		if err := checkRooms(a.Rooms); err != nil {
			return nil, fmt.Errorf("agent %q: %w", a.Name, err)
		}
	}
	return &c, nil
}

// checkRooms checks an agent's rooms: names as the hub spells them, known
// ceilings.
func checkRooms(rooms map[string]string) error {
	for room, c := range rooms {
		if !roomNameRE.MatchString(room) {
			return wh.Errorf(wh.EInvalid, "rooms: %q is not a room name (lowercase letters, digits, '-' and '_')", room)
		}
		if c != "" && !authz.ValidCeiling(c) {
			return wh.Errorf(wh.EInvalid, "rooms.%s = %q: want normal, ask or read-only", room, c)
		}
	}
	return nil
}

var roomNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
