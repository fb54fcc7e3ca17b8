package openai

import (
	"fmt"
	"strings"
)

// maxDiffCells bounds the work of the line diff (old lines × new lines of
// the part that differs); a larger change is shown as a whole replacement.
const maxDiffCells = 4_000_000

// diffContext is the number of unchanged lines shown around a change.
const diffContext = 3

// unifiedDiff returns the unified diff that turns old into new for path
// (oldExists false: a new file), or "" if they are equal. parsePatch and
// applyFile read it back.
func unifiedDiff(path string, old, new []byte, oldExists bool) string {
	if oldExists && string(old) == string(new) {
		return ""
	}
	a, aNoEOL := fileLines(old)
	b, bNoEOL := fileLines(new)
	ka, kb := lineKeys(a, aNoEOL), lineKeys(b, bNoEOL)
	ops := diffOps(ka, kb)

	var w strings.Builder
	if oldExists {
		fmt.Fprintf(&w, "--- a/%s\n", path)
	} else {
		w.WriteString("--- /dev/null\n")
	}
	fmt.Fprintf(&w, "+++ b/%s\n", path)
	for start := 0; start < len(ops); {
		// The next change, with its context; changes closer than twice the
		// context share a hunk.
		first := start
		for first < len(ops) && ops[first].op == ' ' {
			first++
		}
		if first == len(ops) {
			break
		}
		lo := max(start, first-diffContext)
		hi := first
		for {
			for hi < len(ops) && ops[hi].op != ' ' {
				hi++
			}
			next := hi
			for next < len(ops) && ops[next].op == ' ' {
				next++
			}
			if next < len(ops) && next-hi <= 2*diffContext {
				hi = next
				continue
			}
			hi = min(len(ops), hi+diffContext)
			break
		}
		writeHunk(&w, ops[lo:hi], a, b, aNoEOL, bNoEOL)
		start = hi
	}
	return w.String()
}

// diffOp is one line of an edit script. a and b are its line index in the
// old and new text; for a line only one side has, the other is the index
// of that side's next line (where the line goes, or went).
type diffOp struct {
	op   byte // ' ', '-', '+'
	a, b int
}

// lineKeys makes a last line without a newline differ from the same text
// with one.
func lineKeys(lines []string, noEOL bool) []string {
	if !noEOL || len(lines) == 0 {
		return lines
	}
	k := append([]string(nil), lines...)
	k[len(k)-1] += "\x00no newline"
	return k
}

// diffOps is an edit script from a to b: a longest common subsequence of
// lines, after the common head and tail are set aside.
func diffOps(a, b []string) []diffOp {
	var ops []diffOp
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		ops = append(ops, diffOp{' ', pre, pre})
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	n, m := len(ma), len(mb)
	if n > 0 && m > 0 && n*m <= maxDiffCells {
		// lcs[i][j] = LCS length of ma[i:] and mb[j:], in one flat slice.
		lcs := make([]int32, (n+1)*(m+1))
		at := func(i, j int) int32 { return lcs[i*(m+1)+j] }
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				v := max(at(i+1, j), at(i, j+1))
				if ma[i] == mb[j] {
					v = at(i+1, j+1) + 1
				}
				lcs[i*(m+1)+j] = v
			}
		}
		i, j := 0, 0
		for i < n && j < m {
			switch {
			case ma[i] == mb[j]:
				ops = append(ops, diffOp{' ', pre + i, pre + j})
				i++
				j++
			case at(i+1, j) >= at(i, j+1):
				ops = append(ops, diffOp{'-', pre + i, pre + j})
				i++
			default:
				ops = append(ops, diffOp{'+', pre + i, pre + j})
				j++
			}
		}
		for ; i < n; i++ {
			ops = append(ops, diffOp{'-', pre + i, pre + j})
		}
		for ; j < m; j++ {
			ops = append(ops, diffOp{'+', pre + n, pre + j})
		}
	} else {
		for i := range n {
			ops = append(ops, diffOp{'-', pre + i, pre})
		}
		for j := range m {
			ops = append(ops, diffOp{'+', pre + n, pre + j})
		}
	}
	for k := suf; k > 0; k-- {
		ops = append(ops, diffOp{' ', len(a) - k, len(b) - k})
	}
	return ops
}

func writeHunk(w *strings.Builder, ops []diffOp, a, b []string, aNoEOL, bNoEOL bool) {
	aCount, bCount := 0, 0
	for _, o := range ops {
		if o.op != '+' {
			aCount++
		}
		if o.op != '-' {
			bCount++
		}
	}
	// Line numbers are 1-based; an empty side names the line before it.
	aStart, bStart := ops[0].a, ops[0].b
	if aCount > 0 {
		aStart++
	}
	if bCount > 0 {
		bStart++
	}
	fmt.Fprintf(w, "@@ -%d,%d +%d,%d @@\n", aStart, aCount, bStart, bCount)
	for _, o := range ops {
		text := ""
		if o.op == '+' {
			text = b[o.b]
		} else {
			text = a[o.a]
		}
		w.WriteByte(o.op)
		w.WriteString(text)
		w.WriteByte('\n')
		lastA := o.op != '+' && o.a == len(a)-1 && aNoEOL
		lastB := o.op != '-' && o.b == len(b)-1 && bNoEOL
		if lastA || lastB {
			w.WriteString("\\ No newline at end of file\n")
		}
	}
}
