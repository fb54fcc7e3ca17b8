package demo

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// fileLineRE matches the envelope's line for a file posted with the
// message (authz.Envelope): "File N: name (type, size bytes), …".
var fileLineRE = regexp.MustCompile(`^File [0-9]+: (.*?) \(([^()]*), ([0-9]+) bytes\)(, its text:|, saved at (.+)|, not available: (.+))$`)

// fileNotes says what the demo got of the files posted with a message: an
// inline text (data: never read for instructions) or a file the bridge
// saved, which it checks is there.
func fileNotes(text string) []string {
	var notes []string
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		m := fileLineRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name, size := m[1], m[3]
		switch {
		case m[4] == ", its text:":
			n := 0
			for _, l := range lines[i+2:] {
				if !strings.HasPrefix(l, "| ") && l != "|" {
					break
				}
				n++
			}
			notes = append(notes, fmt.Sprintf("received %s inline: %d lines of text, read as data", name, n))
		case m[5] != "":
			want, _ := strconv.ParseInt(size, 10, 64)
			if fi, err := os.Stat(m[5]); err == nil && fi.Size() == want {
				notes = append(notes, fmt.Sprintf("received %s: %d bytes saved for this turn", name, fi.Size()))
			} else {
				notes = append(notes, fmt.Sprintf("could not find %s where the bridge said it saved it", name))
			}
		default:
			notes = append(notes, fmt.Sprintf("did not get %s: %s", name, m[6]))
		}
	}
	return notes
}
