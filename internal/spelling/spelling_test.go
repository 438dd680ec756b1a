package spelling

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"kitten", "sitting", 3},
		{"fusoin", "fusion", 2}, {"cse", "cse", 0},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestClosest(t *testing.T) {
	names := []string{"canonicalize", "cse", "dce", "inline"}
	for _, c := range []struct {
		s     string
		limit int
		want  string
	}{
		{"csee", 3, "cse"},
		{"dse", 3, "cse"}, // cse and dce tie: the first wins
		{"inlne", 1, ""},  // distance 1 is not below 1
		{"inlne", 2, "inline"},
		{"zzzzzz", 4, ""},
	} {
		if got := Closest(c.s, names, c.limit); got != c.want {
			t.Errorf("Closest(%q, limit %d) = %q, want %q", c.s, c.limit, got, c.want)
		}
	}
}

func TestLikely(t *testing.T) {
	for _, c := range []struct{ s, want string }{
		{"fusoin", "fusion"}, {"perf-hints", "perf_hints"}, {"recompile", "recompiles"},
		{"xyz", ""}, {"cuda", ""},
	} {
		if got := Likely(c.s, []string{"fusion", "perf_hints", "recompiles", "cudagraphs"}); got != c.want {
			t.Errorf("Likely(%q) = %q, want %q", c.s, got, c.want)
		}
	}
}
