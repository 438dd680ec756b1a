package ir

import (
	"testing"

	"pgregory.net/rapid"
)

// TestIsBeforeInBlock checks the cached op order against the block's list
// through random edits: inserts at the front, the end and in between
// (also many at one place, which exhausts the gaps between numbers),
// removals, moves within the block and to another block.
func TestIsBeforeInBlock(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		blocks := []*Block{NewBlock(), NewBlock()}
		newOp := func() *Operation { return NewOperation(nil, OperationState{Name: "test.op"}) }
		pick := func(b *Block) *Operation {
			ops := b.Ops()
			if len(ops) == 0 {
				return nil
			}
			return ops[rapid.IntRange(0, len(ops)-1).Draw(t, "at")]
		}
		for range rapid.IntRange(1, 200).Draw(t, "edits") {
			b := blocks[rapid.IntRange(0, 1).Draw(t, "block")]
			switch rapid.IntRange(0, 5).Draw(t, "edit") {
			case 0:
				b.Append(newOp())
			case 1:
				b.InsertBefore(newOp(), b.first)
			case 2:
				if ref := pick(b); ref != nil {
					for range rapid.IntRange(1, 40).Draw(t, "same place") {
						b.InsertBefore(newOp(), ref)
					}
				}
			case 3:
				if op := pick(b); op != nil {
					op.Remove()
				}
			case 4:
				if op, ref := pick(b), pick(b); op != nil && op != ref {
					op.Remove()
					b.InsertBefore(op, ref)
				}
			case 5:
				if op, ref := pick(b), pick(blocks[0]); op != nil && op != ref {
					op.Remove()
					blocks[0].InsertBefore(op, ref)
				}
			}
			// Query a few pairs now and then, so that later edits find the
			// numbering valid.
			for range rapid.IntRange(0, 3).Draw(t, "queries") {
				x, y := pick(blocks[0]), pick(blocks[rapid.IntRange(0, 1).Draw(t, "other")])
				if x == nil || y == nil {
					continue
				}
				if got, want := x.IsBeforeInBlock(y), linearBefore(x, y); got != want {
					t.Fatalf("IsBeforeInBlock = %v, the block's list says %v", got, want)
				}
			}
		}
		for _, b := range blocks {
			ops := b.Ops()
			for i, x := range ops {
				for j, y := range ops {
					if got := x.IsBeforeInBlock(y); got != (i < j) {
						t.Fatalf("ops %d, %d of %d: IsBeforeInBlock = %v", i, j, len(ops), got)
					}
				}
				if x.IsBeforeInBlock(NewOperation(nil, OperationState{Name: "test.detached"})) {
					t.Fatal("an op is before a detached op")
				}
			}
		}
	})
}

// linearBefore is IsBeforeInBlock by walking the list.
func linearBefore(x, y *Operation) bool {
	for o := x.next; o != nil; o = o.next {
		if o == y {
			return true
		}
	}
	return false
}
