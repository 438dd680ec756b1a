package ir

// Pattern is a named rewrite rule for ops named Root ("" matches every op).
// Rewrite changes the IR only through the Rewriter and reports whether it did.
type Pattern struct {
	Name    string
	Root    string
	Benefit int
	Rewrite func(r *Rewriter, op *Operation) bool
}

// Rewriter is the Builder handed to patterns: every change goes through it,
// so drivers can track which ops to revisit.
type Rewriter struct {
	Builder
}
