package web_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// Every {parameter} in a path is declared as a path parameter of each of
// its operations (redocly: "path parameter not defined").
func TestOpenAPIPathParameters(t *testing.T) {
	s := loadSpec(t)
	param := regexp.MustCompile(`\{([^}]+)\}`)
	for p, item := range s.doc["paths"].(map[string]any) {
		item := item.(map[string]any)
		for m, op := range item {
			declared := map[string]bool{}
			for _, src := range []any{item["parameters"], op.(map[string]any)["parameters"]} {
				for _, x := range asList(src) {
					pm, err := s.deref(x)
					if err == nil && pm["in"] == "path" {
						declared[pm["name"].(string)] = true
					}
				}
			}
			for _, g := range param.FindAllStringSubmatch(p, -1) {
				if !declared[g[1]] {
					t.Errorf("%s %s: the path parameter {%s} is not declared", strings.ToUpper(m), p, g[1])
				}
			}
		}
	}
}

// Live answers match the description: a timeline read (it once carried
// chainIntact and complete, which the schema forbade), the owner's and a
// member's; a device enrolled; a room's topic changed.
func TestOpenAPITimelineLive(t *testing.T) {
	tm := newTeam(t, testhub.Options{})
	tm.h.StartBridge(tm.alice, nil, bridge.AgentConfig{Name: "demo", Harness: "demo",
		Options: map[string]string{"steps": "1", "step": "10ms"}})
	testhub.CheckFor(t, 30*time.Second, "the agent", func() error {
		if r := tm.alice.Do("GET", "/api/v1/agents/alice/demo/timeline", nil); r.Status != 200 {
			return errStatus(r)
		}
		return nil
	})
	tm.alice.AddAgent("dev", "alice/demo")
	tm.bob.Must(200, "GET", "/api/v1/agents/alice/demo/timeline", nil) // a member: complete false
	tm.alice.Must(200, "PATCH", "/api/v1/rooms/dev", map[string]any{"topic": "checked against the spec"})
}

type statusErr struct{ r testhub.Response }

func (e statusErr) Error() string { return string(e.r.Raw) }

func errStatus(r testhub.Response) error { return statusErr{r} }
