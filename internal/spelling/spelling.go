// Package spelling finds the known name a misspelt one was probably meant
// to be, for the "did you mean" of diagnostics (pass, option, op, flag,
// log topic and help topic names).
package spelling

// Distance is the Levenshtein distance between a and b, in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Closest returns the first of candidates nearest to s in edit distance
// when that distance is below limit, else "".
func Closest(s string, candidates []string, limit int) string {
	best := ""
	for _, c := range candidates {
		if d := Distance(s, c); d < limit {
			best, limit = c, d
		}
	}
	return best
}

// Likely is Closest with the bound of a likely misspelling: at most a
// third of s's length in edits, and at least one, at most three.
func Likely(s string, candidates []string) string {
	return Closest(s, candidates, min(len(s)/3+1, 3)+1)
}
