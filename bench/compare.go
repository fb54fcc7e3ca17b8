package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
)

// A run printed with --json can be compared with the next one: the
// headline figure of each section, then and now. Figures are read from
// both runs' JSON, so a run of an older binary compares as far as it has
// the same figures.

// Previous is an earlier run, as its --json output.
type Previous struct {
	Path    string
	Started string
	Load    float64
	doc     map[string]any
}

// LoadPrevious reads an earlier run's --json output.
func LoadPrevious(path string) (*Previous, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s is not the JSON of a run (wheelhouse bench --json): %v", path, err)
	}
	started, _ := doc["started"].(string)
	if t, err := time.Parse(time.RFC3339Nano, started); err == nil {
		started = t.UTC().Format(time.RFC3339)
	}
	if started == "" {
		return nil, fmt.Errorf("%s is JSON but not a run of wheelhouse bench --json (it has no \"started\")", path)
	}
	load, _ := doc["loadStart"].(float64)
	return &Previous{Path: path, Started: started, Load: load, doc: doc}, nil
}

// Change is one figure in both runs.
type Change struct {
	Figure   string
	Was, Now float64
	Unit     string
	Lower    bool // lower is better
}

// Delta is the change in per cent of the earlier figure.
func (c Change) Delta() float64 {
	if c.Was == 0 {
		return math.NaN()
	}
	return (c.Now - c.Was) / c.Was * 100
}

// figure names one number of a section's JSON.
type figure struct {
	label, path, unit string
	lower             bool
	scale             float64 // multiplies the JSON's number (1 if 0)
}

// sectionFigures are the headline figures of each section; list sections
// hold one entry per case, told apart by the keys.
var sectionFigures = []struct {
	section string
	keys    []string // list sections: the fields that name a case
	figures []figure
}{
	{"posts", []string{"sync", "over"}, []figure{{label: "durable posts", path: "hub.perSecond", unit: "/s"}, {label: "ratio to raw JetStream", path: "ratio", unit: "×"}}},
	{"fanout", []string{"members"}, []figure{{label: "p99", path: "hub.p99Micros", unit: "ms", lower: true, scale: 1e-3}, {label: "p99 ratio to raw", path: "ratioP99", unit: "×", lower: true}}},
	{"mentions", []string{"sender", "over"}, []figure{{label: "p50", path: "hub.p50Micros", unit: "µs", lower: true}, {label: "p99", path: "hub.p99Micros", unit: "ms", lower: true, scale: 1e-3}}},
	{"idle", nil, []figure{{label: "RSS per socket", path: "hub.rssBytesPerSocket", unit: "KiB", lower: true, scale: 1.0 / 1024}}},
	{"cluster", nil, []figure{{label: "durable posts", path: "posts.perSecond", unit: "/s"}, {label: "post → socket across, p50", path: "across.p50Micros", unit: "ms", lower: true, scale: 1e-3},
		{label: "mention → harness, p50", path: "mentions.p50Micros", unit: "ms", lower: true, scale: 1e-3}}},
	{"start", nil, []figure{{label: "first start", path: "firstSeconds", unit: "s", lower: true}}},
	{"model", nil, []figure{{label: "harness p50", path: "harness.p50Micros", unit: "µs", lower: true}}},
	{"search", nil, []figure{{label: "p50", path: "hub.p50Micros", unit: "ms", lower: true, scale: 1e-3}, {label: "fill", path: "fill.perSecond", unit: "/s"}}},
	{"uploads", nil, []figure{{label: "throughput", path: "hub.mbPerSecond", unit: "MB/s"}}},
	{"hook", nil, []figure{{label: "no note, median", path: "NoNote.Median", unit: "ms", lower: true, scale: 1e-6}}},
}

// Compare lines up this run's headline figures with prev's: those both runs
// have.
func (r *Results) Compare(prev *Previous) ([]Change, error) {
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		return nil, err
	}
	var now map[string]any
	if err := json.Unmarshal(buf.Bytes(), &now); err != nil {
		return nil, err
	}
	var out []Change
	for _, s := range sectionFigures {
		was, is := cases(prev.doc[s.section], s.keys), cases(now[s.section], s.keys)
		for _, c := range is {
			w, ok := find(was, c.name)
			if !ok {
				continue
			}
			for _, f := range s.figures {
				a, okA := number(w.v, f.path)
				b, okB := number(c.v, f.path)
				if !okA || !okB {
					continue
				}
				scale := f.scale
				if scale == 0 {
					scale = 1
				}
				name := s.section
				if c.name != "" {
					name += " " + c.name
				}
				out = append(out, Change{Figure: name + ": " + f.label, Was: a * scale, Now: b * scale, Unit: f.unit, Lower: f.lower})
			}
		}
	}
	return out, nil
}

type namedCase struct {
	name string
	v    any
}

// cases are a section's cases: each entry of a list, named by its keys,
// or the one object.
func cases(v any, keys []string) []namedCase {
	switch t := v.(type) {
	case map[string]any:
		return []namedCase{{"", t}}
	case []any:
		var out []namedCase
		for _, e := range t {
			m, ok := e.(map[string]any)
			if !ok {
				continue
			}
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprint(m[k]))
			}
			out = append(out, namedCase{strings.Join(parts, " "), m})
		}
		return out
	}
	return nil
}

func find(cs []namedCase, name string) (namedCase, bool) {
	for _, c := range cs {
		if c.name == name {
			return c, true
		}
	}
	return namedCase{}, false
}

// number is the number at a dotted path of v.
func number(v any, path string) (float64, bool) {
	for _, p := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return 0, false
		}
		v = m[p]
	}
	f, ok := v.(float64)
	return f, ok
}

// WriteComparison prints changes beside the run they compare with. A
// change of more than a tenth is called better or worse; less is within
// what runs on a shared machine move by.
func WriteComparison(w io.Writer, prev *Previous, changes []Change) {
	fmt.Fprintf(w, "\nCompared with %s (started %s, load average %.2f)\n", prev.Path, prev.Started, prev.Load)
	if len(changes) == 0 {
		fmt.Fprintln(w, "  no figure in common: the two runs measured different sections")
		return
	}
	width := 0
	for _, c := range changes {
		width = max(width, len([]rune(c.Figure)))
	}
	for _, c := range changes {
		d := c.Delta()
		verdict := ""
		switch {
		case math.IsNaN(d):
		case math.Abs(d) > 10 && (d < 0) == c.Lower:
			verdict = "  better"
		case math.Abs(d) > 10:
			verdict = "  worse"
		}
		delta := "    —"
		if !math.IsNaN(d) {
			delta = fmt.Sprintf("%+5.0f%%", d)
		}
		fmt.Fprintf(w, "  %-*s  %10s → %-10s %s%s\n", width, c.Figure, format(c.Was, c.Unit), format(c.Now, c.Unit), delta, verdict)
	}
}

func format(v float64, unit string) string {
	switch {
	case unit == "×":
		return fmt.Sprintf("%.2f×", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	default:
		return fmt.Sprintf("%.2f %s", v, unit)
	}
}
