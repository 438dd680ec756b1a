package onnx

import (
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-ir/strata/dialects"
)

// writeLargeModel writes an MLP of `layers` MatMul+Add+Relu layers of
// width n (4·n² bytes of weights each) with a dim_param batch.
func writeLargeModel(path string, layers, n int) error {
	g := &Graph{}
	g.Inputs = []*ValueInfo{{Name: "x" + itoa(0), ElemType: TypeFloat, HasShape: true, Dims: []Dim{{Param: "batch"}, {Value: int64(n), HasValue: true}}}}
	raw := make([]byte, 4*n*n)
	for i := range n * n {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(i%97)/97-0.5))
	}
	for l := range layers {
		w, bias := "w"+itoa(l), "b"+itoa(l)
		g.Initializers = append(g.Initializers,
			&Tensor{Name: w, Dims: []int64{int64(n), int64(n)}, DataType: TypeFloat, RawData: raw, HasRaw: true},
			&Tensor{Name: bias, Dims: []int64{int64(n)}, DataType: TypeFloat, RawData: raw[:4*n], HasRaw: true})
		x, h, a, y := "x"+itoa(l), "h"+itoa(l), "a"+itoa(l), "x"+itoa(l+1)
		g.Nodes = append(g.Nodes,
			&Node{OpType: "MatMul", Inputs: []string{x, w}, Outputs: []string{h}},
			&Node{OpType: "Add", Inputs: []string{h, bias}, Outputs: []string{a}},
			&Node{OpType: "Relu", Inputs: []string{a}, Outputs: []string{y}})
	}
	g.Outputs = []*ValueInfo{{Name: "x" + itoa(layers), ElemType: TypeFloat}}
	m := &Model{IRVersion: 8, Opsets: []OpsetID{{Version: 17}}, Graph: g}
	return os.WriteFile(path, m.Marshal(), 0o644)
}

func itoa(i int) string { return string(rune('a'+i/26)) + string(rune('a'+i%26)) }

// BenchmarkWriteMLIR100MB is the text import of a 100 MB model (five
// layers of 2236² float32 weights): go test -bench WriteMLIR100MB
// -benchmem ./importers/onnx. Set STRATA_ONNX_LARGE to a path to keep the
// model (for measuring irc import's memory with /usr/bin/time).
func BenchmarkWriteMLIR100MB(b *testing.B) {
	path := os.Getenv("STRATA_ONNX_LARGE")
	if path == "" {
		path = filepath.Join(b.TempDir(), "large.onnx")
	}
	if err := writeLargeModel(path, 5, 2236); err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	ctx := dialects.NewContext()
	b.ResetTimer()
	for range b.N {
		if err := WriteMLIR(io.Discard, ctx, path, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
