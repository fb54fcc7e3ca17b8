package bridge

import (
	"os"
	"testing"
	"time"
)

func TestExampleConfigParses(t *testing.T) {
	b, err := os.ReadFile("../docs/bridge.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Agents) != 4 {
		t.Fatalf("agents %d", len(c.Agents))
	}
	p, err := c.Agents[1].PolicyFile.Policy()
	if err != nil || p.Address != "users" || len(p.Allowed) != 2 || p.MaxAge.D() != 10*time.Minute {
		t.Fatalf("policy %+v %v", p, err)
	}
}

func TestConfigErrors(t *testing.T) {
	for name, text := range map[string]string{
		"UnknownKey":  "[[agent]]\nname='a'\nharness='demo'\ncolour='red'\n",
		"NoHarness":   "[[agent]]\nname='a'\n",
		"Duplicate":   "[[agent]]\nname='a'\nharness='demo'\n[[agent]]\nname='a'\nharness='demo'\n",
		"BadAddress":  "[[agent]]\nname='a'\nharness='demo'\n[agent.policy]\naddress='everyone'\n",
		"BadDuration": "[[agent]]\nname='a'\nharness='demo'\n[agent.policy]\nmax_age='soon'\n",
		"NegativeMax": "[[agent]]\nname='a'\nharness='demo'\n[agent.policy]\nmax_steers=-1\n",
		"NotTOML":     "[[agent",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseConfig(text); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add("[[agent]]\nname='a'\nharness='demo'\n[agent.policy]\nmax_age='1s'\n")
	f.Add("credentials = 'x'\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := ParseConfig(text)
		if err != nil {
			return
		}
		for _, a := range c.Agents {
			if a.Name == "" || a.Harness == "" {
				t.Fatalf("accepted an agent without name or harness: %+v", a)
			}
			if _, err := a.PolicyFile.Policy(); err != nil {
				t.Fatalf("accepted a config whose policy does not convert: %v", err)
			}
		}
	})
}
