// Package textdiff renders the difference of two texts line by line, for
// test failures: krplytest/golden's and krplytest's golden files. It imports
// no testing and registers no flags, so public test helpers may use it.
package textdiff

import (
	"fmt"
	"strings"
)

// Diff returns a unified-style diff of two texts: changed lines with two
// lines of context, at most 120 lines.
func Diff(a, b string) string {
	const context, maxDiffLines = 2, 120
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	// Longest common subsequence by dynamic programming: the golden files
	// are a few thousand lines, so n*m cells are affordable in a test.
	lcs := make([][]int32, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte // ' ', '-', '+'
		line string
		at   int // line number in a (for ' ' and '-') or b (for '+'), from 1
	}
	var ops []op
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			ops = append(ops, op{' ', x[i], i + 1})
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', x[i], i + 1})
			i++
		default:
			ops = append(ops, op{'+', y[j], j + 1})
			j++
		}
	}
	var out []string
	last := -1 // index of the last op printed
	for k, o := range ops {
		if o.kind == ' ' {
			continue
		}
		from := max(k-context, last+1)
		if last < 0 || from > last+1 {
			out = append(out, fmt.Sprintf("@@ line %d @@", ops[from].at))
		}
		for _, c := range ops[from:k] {
			out = append(out, " "+c.line)
		}
		out = append(out, string(o.kind)+o.line)
		last = k
		// Trailing context, unless the next change comes first.
		for c := k + 1; c < len(ops) && c <= k+context && ops[c].kind == ' '; c++ {
			out = append(out, " "+ops[c].line)
			last = c
		}
		if len(out) > maxDiffLines {
			out = append(out[:maxDiffLines], "... (diff cut)")
			break
		}
	}
	return strings.Join(out, "\n")
}
