package interp

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-ir/strata/dialects/builtin"
	funcd "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

func parseGraph(t testing.TB, src string) *ir.Operation {
	t.Helper()
	ctx := ir.NewContext(builtin.Dialect, funcd.Dialect, graph.Dialect)
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "t.mlir"})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := ir.Verify(m); err != nil {
		t.Fatalf("verify: %v", err)
	}
	return m
}

func f32t(t testing.TB, shape []int64, vs ...float64) *Tensor {
	t.Helper()
	x, err := FromFloat64s(ir.F32, shape, vs)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// perRank gives rank r the tensor [r*10 + 1, r*10 + 2, …] of shape.
func perRank(t testing.TB, n int, shape []int64) [][]Value {
	var out [][]Value
	for r := range n {
		var vs []float64
		for i := range ir.NumElements(shape) {
			vs = append(vs, float64(r*10)+float64(i)+1)
		}
		out = append(out, []Value{f32t(t, shape, vs...)})
	}
	return out
}

// TestCollectivesOnRanks checks each collective's result on every rank of
// simulated worlds of one to three ranks.
func TestCollectivesOnRanks(t *testing.T) {
	cases := []struct {
		name, op, attrs, out string
		n                    int
		want                 func(rank int) []float64
	}{
		{"all_reduce sum", "all_reduce", `reduce = "sum"`, "2x2", 3, func(int) []float64 { return []float64{33, 36, 39, 42} }},
		{"all_reduce avg", "all_reduce", `reduce = "avg"`, "2x2", 3, func(int) []float64 { return []float64{11, 12, 13, 14} }},
		{"all_reduce max", "all_reduce", `reduce = "max"`, "2x2", 3, func(int) []float64 { return []float64{21, 22, 23, 24} }},
		{"all_reduce of one rank", "all_reduce", `reduce = "avg"`, "2x2", 1, func(int) []float64 { return []float64{1, 2, 3, 4} }},
		{"all_gather axis 0", "all_gather", `axis = 0 : i64`, "4x2", 2, func(int) []float64 { return []float64{1, 2, 3, 4, 11, 12, 13, 14} }},
		{"all_gather axis 1", "all_gather", `axis = 1 : i64`, "2x4", 2, func(int) []float64 { return []float64{1, 2, 11, 12, 3, 4, 13, 14} }},
		{"reduce_scatter axis 0", "reduce_scatter", `axis = 0 : i64`, "1x2", 2, func(r int) []float64 { return [][]float64{{12, 14}, {16, 18}}[r] }},
		{"reduce_scatter axis 1 avg", "reduce_scatter", `axis = 1 : i64, reduce = "avg"`, "2x1", 2, func(r int) []float64 { return [][]float64{{6, 8}, {7, 9}}[r] }},
		{"broadcast root 1", "broadcast", `root = 1 : i64`, "2x2", 3, func(int) []float64 { return []float64{11, 12, 13, 14} }},
		{"reduce_to root 2", "reduce_to", `root = 2 : i64`, "2x2", 3, func(r int) []float64 {
			if r == 2 {
				return []float64{33, 36, 39, 42}
			}
			return []float64{0, 0, 0, 0}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := `func.func @f(%x: tensor<2x2xf32>) -> tensor<` + c.out + `xf32> {
  %y = "graph.` + c.op + `"(%x) <{` + c.attrs + `}> : (tensor<2x2xf32>) -> tensor<` + c.out + `xf32>
  return %y : tensor<` + c.out + `xf32>
}`
			res, err := RunRanks(context.Background(), parseGraph(t, src), "f", c.n, perRank(t, c.n, []int64{2, 2}))
			if err != nil {
				t.Fatal(err)
			}
			for r := range c.n {
				if got := res[r][0].(*Tensor).Float64s(); !slices.Equal(got, c.want(r)) {
					t.Errorf("rank %d: %v, want %v", r, got, c.want(r))
				}
			}
		})
	}
}

// TestCollectiveWithoutWorld checks that an interpreter without a
// Communicator is a world of one rank.
func TestCollectiveWithoutWorld(t *testing.T) {
	got := runGraph(t, `func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y = "graph.all_reduce"(%x) <{reduce = "avg"}> : (tensor<3xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}`, f32t(t, []int64{3}, 1, 2, 3))
	if v := got[0].Float64s(); !slices.Equal(v, []float64{1, 2, 3}) {
		t.Errorf("all_reduce avg of one rank = %v, want its operand", v)
	}
}

// TestRunRanksErrors checks the diagnostics of bad worlds and of ranks that
// disagree.
func TestRunRanksErrors(t *testing.T) {
	sum := parseGraph(t, `func.func @f(%x: tensor<?xf32>) -> tensor<?xf32> {
  %y = "graph.all_reduce"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}`)
	ctx := context.Background()
	in := func(sizes ...int64) [][]Value {
		var out [][]Value
		for _, n := range sizes {
			out = append(out, []Value{f32t(t, []int64{n}, make([]float64, n)...)})
		}
		return out
	}
	cases := []struct {
		name string
		run  func() error
		want []string
	}{
		{"world size 0", func() error { _, err := RunRanks(ctx, sum, "f", 0, nil); return err },
			[]string{"world size must be at least 1, got 0"}},
		{"inputs per rank", func() error { _, err := RunRanks(ctx, sum, "f", 3, in(2, 2)); return err },
			[]string{"3 ranks need 3 input lists, got 2"}},
		{"mismatched shapes", func() error { _, err := RunRanks(ctx, sum, "f", 2, in(2, 3)); return err },
			[]string{"collective #0 does not agree across ranks", "f32 of shape [2]", "rank 1", "f32 of shape [3]", "t.mlir:2:8"}},
		{"unknown group", func() error {
			m := parseGraph(t, `func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = "graph.all_reduce"(%x) <{group = "tensor_parallel"}> : (tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}`)
			_, err := RunRanks(ctx, m, "f", 2, in(2, 2))
			return err
		}, []string{`unknown process group "tensor_parallel"`, `only "world"`}},
		{"root out of range", func() error {
			m := parseGraph(t, `func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = "graph.broadcast"(%x) <{root = 2 : i64}> : (tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}`)
			_, err := RunRanks(ctx, m, "f", 2, in(2, 2))
			return err
		}, []string{`root 2 is not a rank of group "world", which has 2`}},
		{"compiled for another world", func() error {
			m := parseGraph(t, `func.func @f(%x: tensor<2xf32>) -> tensor<4xf32> {
  %y = "graph.all_gather"(%x) : (tensor<2xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}`)
			_, err := RunRanks(ctx, m, "f", 3, in(2, 2, 2))
			return err
		}, []string{"group \"world\" of 3 ranks the result is f32 of shape [6]", "tensor<4xf32>", "another number of ranks"}},
		{"a rank that skips a collective", func() error {
			// Rank 1 runs a function without the collective rank 0 waits in.
			m := parseGraph(t, `func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = "graph.all_reduce"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}
func.func @g(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}`)
			w := NewWorld(2)
			errs := make(chan error, 2)
			go func() { _, err := New(m, WithCommunicator(w.Rank(0))).Call("f", in(2)[0]...); errs <- err }()
			time.Sleep(10 * time.Millisecond)
			_, err := New(m, WithCommunicator(w.Rank(1))).Call("g", in(2)[0]...)
			if err != nil {
				return err
			}
			w.finish(1)
			return <-errs
		}, []string{"rank 1 returned without joining collective #0", "graph.all_reduce", "which rank 0 waits in"}},
		{"a failing rank stops the others", func() error {
			m := parseGraph(t, `func.func @f(%x: tensor<?xf32>) -> tensor<2xf32> {
  %r = "graph.reshape"(%x) <{shape = [2]}> : (tensor<?xf32>) -> tensor<2xf32>
  %y = "graph.all_reduce"(%r) : (tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}`)
			_, err := RunRanks(ctx, m, "f", 2, in(2, 3))
			return err
		}, []string{"rank 1:", "reshape"}},
		{"cancelled", func() error {
			c, cancel := context.WithCancel(ctx)
			cancel()
			w := NewWorld(2)
			stop := context.AfterFunc(c, func() { w.Abort(c.Err()) })
			defer stop()
			time.Sleep(time.Millisecond)
			_, err := New(sum, WithCommunicator(w.Rank(0))).Call("f", in(2)[0]...)
			return err
		}, []string{"stopped", "context canceled"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.run()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
