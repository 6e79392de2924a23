package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2}, {"héllo", "hello", 1},
		// A transposition of two neighbours is one edit (two substitutions under Levenshtein).
		{"comapre", "compare", 1}, {"plna", "plan", 1}, {"ab", "ba", 1}, {"éa", "aé", 1},
		// plna -> plot: substitute n->o and a->t, no transposition helps.
		{"plna", "plot", 2},
		// Optimal string alignment edits no substring twice: ca -> abc is 3 (unrestricted
		// Damerau-Levenshtein would make it 2: ca -> ac -> abc, editing the transposed pair again).
		{"ca", "abc", 3},
	} {
		if got := Distance(c.a, c.b); got != c.d || Distance(c.b, c.a) != c.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}

func TestNearest(t *testing.T) {
	commands := []string{"predict", "models", "hardware", "exec", "sim", "plot", "compare", "calibrate", "plan", "validate"}
	styles := []string{"colwise", "rowwise", "sequence", "noparallel", "input_replicate", "input_shard", "output_replicate", "output_shard"}
	for _, c := range []struct {
		s    string
		in   []string
		want string
		ok   bool
	}{
		{"comapre", commands, "compare", true},
		// plot comes before plan in the list: a tie would give plot.
		{"plna", commands, "plan", true},
		{"predcit", commands, "predict", true},
		{"calibrat", commands, "calibrate", true},
		{"xyzzy", commands, "", false},
		{"ColumnwiseParallel", styles, "colwise", true},
		{"RowwiseParallel", styles, "rowwise", true},
		{"SequenceParalel", styles, "sequence", true},
		{"input-shard", styles, "input_shard", true},
		{"banana", styles, "", false},
		{"gpt-tiy", []string{"seed-mlp", "gpt-tiny", "gpt2-small"}, "gpt-tiny", true},
		{"a100", []string{"a100-80g", "h100-sxm", "h200", "host"}, "a100-80g", true},
		{"", commands, "", false},
	} {
		got, ok := Nearest(c.s, c.in)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("Nearest(%q) = %q, %v; want %q, %v", c.s, got, ok, c.want, c.ok)
		}
	}
	if got := DidYouMean("comapre", commands); got != ` (did you mean "compare"?)` {
		t.Errorf("DidYouMean = %q", got)
	}
	if got := DidYouMean("compare", commands); got != "" {
		t.Errorf("DidYouMean of an exact name = %q", got)
	}
}
