// Package suggest finds the name a user probably meant, by edit distance: "did you mean" for
// commands, flags, model, hardware and style names.
package suggest

import (
	"strings"
	"unicode/utf8"
)

// Distance is the optimal string alignment distance between a and b: the fewest insertions,
// deletions and substitutions of one rune, and transpositions of two adjacent runes, that turn
// one into the other, no substring edited twice (Damerau 1964 counts a transposition as one
// error, the commonest typing slip with the other three; Boytsov 2011, "Indexing methods for
// approximate dictionary searching", sec. 2.2, names this restricted form). "plna" is 1 from
// "plan" and 2 from "plot", where plain Levenshtein distance puts both at 2.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rows: the one before the previous is needed for a transposition.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// normalize folds case and drops what users add or leave out of names without meaning another
// one: separators ("-", "_", " ") and PyTorch's "Parallel" suffix (ColwiseParallel is colwise).
func normalize(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.NewReplacer("-", "", "_", "", " ", "").Replace(s)
	if t := strings.TrimSuffix(s, "parallel"); t != "" {
		s = t
	}
	return s
}

// Nearest returns the candidate s probably means, and whether there is one: the first candidate
// that s begins (at least 3 characters: "a100" for "a100-80g"), else the closest by edit distance
// if within 2 edits or a third of the longer name, after folding case, separators and a
// "Parallel" suffix. Ties go to the earlier candidate.
func Nearest(s string, candidates []string) (string, bool) {
	ns := normalize(s)
	if ns == "" {
		return "", false
	}
	if utf8.RuneCountInString(ns) >= 3 {
		for _, c := range candidates {
			if strings.HasPrefix(normalize(c), ns) {
				return c, true
			}
		}
	}
	best, bestD, bestN := "", -1, ""
	for _, c := range candidates {
		nc := normalize(c)
		// A misspelt "Parallel" suffix is not stripped: measure against the name with it too.
		d := min(Distance(ns, nc), Distance(ns, nc+"parallel"))
		if d < bestD || bestD < 0 {
			best, bestD, bestN = c, d, nc
		}
	}
	if bestD < 0 {
		return "", false
	}
	limit := max(2, max(utf8.RuneCountInString(ns), utf8.RuneCountInString(bestN))/3)
	return best, bestD <= limit
}

// DidYouMean is ` (did you mean "x"?)` when a candidate is near s, else "".
func DidYouMean(s string, candidates []string) string {
	if c, ok := Nearest(s, candidates); ok && c != s {
		return ` (did you mean "` + c + `"?)`
	}
	return ""
}
