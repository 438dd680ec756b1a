package safetensors

import (
	"bytes"
	"encoding/binary"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
)

// file builds a safetensors file from a header string and data.
func file(header string, data []byte) []byte {
	var b bytes.Buffer
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(header)))
	b.Write(n[:])
	b.WriteString(header)
	b.Write(data)
	return b.Bytes()
}

func TestRoundTrip(t *testing.T) {
	xs := []*frontend.Tensor{
		frontend.FromSlice([]float32{1, -2.5, 3e-3, 65504, 1e-7, 0}, 2, 3),
		frontend.FromSlice([]float64{math.Pi, -1}, 2),
		frontend.FromSlice([]int64{-1, 1 << 40, 7}, 3),
		frontend.FromSlice([]int32{5, -6}, 1, 2),
		frontend.FromSlice([]bool{true, false, true}, 3),
		frontend.FromSlice([]float32{1.5, -0.25, 3}, 3).Cast(frontend.BFloat16),
		frontend.FromSlice([]float32{1.5, -0.25, 6.1e-5}, 3).Cast(frontend.Float16),
		frontend.FromSlice([]float32{2}, []int{}...),
	}
	var ts []*Tensor
	for i, x := range xs {
		dt, err := DTypeOf(x.DType())
		if err != nil {
			t.Fatal(err)
		}
		st, err := FromFrontend(string(rune('a'+i)), x, dt)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, st)
	}
	var buf bytes.Buffer
	if err := Encode(&buf, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	if hl := binary.LittleEndian.Uint64(buf.Bytes()); hl%8 != 0 {
		t.Errorf("header of %d bytes: the data is not 8-byte aligned", hl)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["format"] != "pt" || len(f.Tensors) != len(xs) {
		t.Fatalf("metadata %v, %d tensors", f.Metadata, len(f.Tensors))
	}
	for i, x := range xs {
		st := f.Lookup(string(rune('a' + i)))
		got, err := ToFrontend(st)
		if err != nil {
			t.Fatal(err)
		}
		if got.DType() != x.DType() || !slices.Equal(got.Shape(), x.Shape()) || !slices.Equal(got.Float64s(), x.Float64s()) {
			t.Errorf("%s: got %v %v, want %v %v", st, got, got.Float64s(), x, x.Float64s())
		}
	}
}

func TestHalfConversions(t *testing.T) {
	for h := range 1 << 16 {
		f := halfToFloat(uint16(h))
		if f != f {
			continue
		}
		if back := floatToHalf(f); back != uint16(h) {
			t.Fatalf("half %#04x -> %g -> %#04x", h, f, back)
		}
	}
	for _, c := range []struct {
		f    float32
		want uint16
	}{{1, 0x3c00}, {65504, 0x7bff}, {65520, 0x7c00}, {1 + 1.0/2048, 0x3c00}, {1 + 3.0/2048, 0x3c02}, {-2, 0xc000}, {5.96e-8, 0x0001}} {
		if got := floatToHalf(c.f); got != c.want {
			t.Errorf("floatToHalf(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
	if got := floatToBF16(1 + 1.0/256); got != 0x3f80 { // tie to even
		t.Errorf("floatToBF16 tie: %#04x", got)
	}
	if got := floatToBF16(1 + 3.0/256); got != 0x3f82 {
		t.Errorf("floatToBF16 tie up: %#04x", got)
	}
}

func TestBadFiles(t *testing.T) {
	f32x2 := make([]byte, 8)
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"short", []byte{1, 2, 3}, "shorter than the 8-byte header length"},
		{"header too long", file(`{}`, nil)[:9], "exceeds the 1 bytes"},
		{"huge header", append([]byte{0, 0, 0, 0, 0, 0, 0, 1}, make([]byte, 16)...), "exceeds the limit"},
		{"not json", file(`{"a":`, nil), "not a JSON object"},
		{"null", file(`null`, nil), "null"},
		{"trailing", file(`{} x`, nil), "after the header's JSON"},
		{"dtype", file(`{"a":{"dtype":"F8","shape":[2],"data_offsets":[0,8]}}`, f32x2), `tensor "a": dtype "F8"`},
		{"negative shape", file(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, f32x2), "negative size"},
		{"no shape", file(`{"a":{"dtype":"F32","data_offsets":[0,8]}}`, f32x2), "no shape"},
		{"offsets outside", file(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, f32x2), "outside the 8 bytes"},
		{"offsets reversed", file(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}`, f32x2), "outside"},
		{"length", file(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, f32x2), "needs 12"},
		{"hole", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32x2), "belong to no tensor"},
		{"overlap", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32x2), "overlaps"},
		{"uncovered tail", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32x2), "cover 4 bytes of data, the file has 8"},
		{"overflow", file(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, f32x2), "too many elements"},
		{"metadata", file(`{"__metadata__":{"a":1}}`, nil), "__metadata__"},
		{"unknown field", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}}`, f32x2), "bad entry"},
	}
	for _, c := range cases {
		_, err := Parse(c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// FuzzParse: Parse never panics, and what it accepts encodes back to a
// file that parses to the same tensors.
func FuzzParse(f *testing.F) {
	var buf bytes.Buffer
	a, err := FromFrontend("a", frontend.FromSlice([]float32{1, 2}, 2), F32)
	if err != nil {
		f.Fatal(err)
	}
	b, err := FromFrontend("b", frontend.FromSlice([]int64{3}, 1), I64)
	if err != nil {
		f.Fatal(err)
	}
	if err := Encode(&buf, []*Tensor{a, b}, map[string]string{"k": "v"}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add(file(`{"a":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}}`, []byte{0x80, 0x3f}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b)
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := Encode(&out, file.Tensors, file.Metadata); err != nil {
			t.Fatalf("re-encoding a parsed file: %v", err)
		}
		again, err := Parse(out.Bytes())
		if err != nil {
			t.Fatalf("re-parsing: %v", err)
		}
		if len(again.Tensors) != len(file.Tensors) || !maps.Equal(again.Metadata, file.Metadata) {
			t.Fatalf("re-parsed %d tensors and metadata %v, want %d and %v", len(again.Tensors), again.Metadata, len(file.Tensors), file.Metadata)
		}
		for i, t0 := range file.Tensors {
			t1 := again.Tensors[i]
			if t0.Name != t1.Name || t0.DType != t1.DType || !slices.Equal(t0.Shape, t1.Shape) || !bytes.Equal(t0.Data, t1.Data) {
				t.Fatalf("tensor %d changed: %s vs %s", i, t0, t1)
			}
		}
	})
}

type tiny struct {
	L   *nn.Linear `nn:"fc"`
	BN  *nn.BatchNorm2d
	Emb *nn.Embedding
}

func newTiny(seed uint64) *tiny {
	g := nn.NewRNG(seed)
	return &tiny{L: nn.NewLinear(g, 3, 2, true), BN: nn.NewBatchNorm2d(2), Emb: nn.NewEmbedding(g, 4, 2, 1)}
}

func TestSaveLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	src := newTiny(1)
	src.BN.RunningMean = frontend.FromSlice([]float32{0.5, -0.5}, 2)
	if err := Save(path, src, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.Names(), " "); got != "bn.bias bn.running_mean bn.running_var bn.weight emb.weight fc.bias fc.weight" {
		t.Errorf("names: %s", got)
	}
	dst := newTiny(2)
	if err := Load(dst, f, LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, r := range nn.Refs(dst) {
		if want := nn.Refs(src)[i].Tensor().Float32s(); !slices.Equal(r.Tensor().Float32s(), want) {
			t.Errorf("%s: %v, want %v", r.Name, r.Tensor().Float32s(), want)
		}
	}
	// A model in bf16 loads the f32 file, converted.
	bf := newTiny(3)
	if err := nn.Cast(bf, frontend.BFloat16); err != nil {
		t.Fatal(err)
	}
	if err := Load(bf, f, LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	if bf.L.Weight.DType() != frontend.BFloat16 {
		t.Errorf("loaded weight is %v", bf.L.Weight.DType())
	}

	// Mismatches are errors, and change nothing.
	other := &struct{ Fc *nn.Linear }{nn.NewLinear(nn.NewRNG(4), 2, 2, true)}
	before := other.Fc.Weight
	if err := Load(other, f, LoadOptions{AllowUnused: true}); err == nil || !strings.Contains(err.Error(), `"fc.weight" has shape [3 2], the model's [2 2]`) {
		t.Errorf("shape mismatch: %v", err)
	}
	if other.Fc.Weight != before {
		t.Error("a failed Load changed the model")
	}
	if err := Load(&struct{ Fc *nn.Linear }{nn.NewLinear(nn.NewRNG(4), 3, 2, true)}, f, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "no tensor for 5 of the file's") {
		t.Errorf("unused tensors: %v", err)
	}
	if err := Load(&struct{ X *nn.Linear }{nn.NewLinear(nn.NewRNG(4), 3, 2, true)}, f, LoadOptions{AllowUnused: true}); err == nil || !strings.Contains(err.Error(), "lacks 2 of the model's tensors: x.weight, x.bias") {
		t.Errorf("missing tensors: %v", err)
	}
	// A failed write leaves the previous file.
	if err := Write(path, []*Tensor{{Name: "a", DType: F32, Shape: []int{2}, Data: []byte{1}}}, nil); err == nil {
		t.Error("writing a tensor with the wrong byte count: no error")
	}
	if _, err := Read(path); err != nil {
		t.Errorf("the failed write damaged the file: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files left in the directory, want 1", len(ents))
	}
}

// TestLoadTorchLinear loads a PyTorch state dict's linear weights
// ([out, in]) into nn.Linear ([in, out]) with TorchLinear, square and not,
// through a slice and an interface; without it the non-square one is an
// error that names the option.
func TestLoadTorchLinear(t *testing.T) {
	type block struct {
		Q   *nn.Linear
		Out nn.Layer
	}
	type model struct{ Blocks []*block }
	g := nn.NewRNG(7)
	newModel := func() *model {
		return &model{Blocks: []*block{{Q: nn.NewLinear(g, 3, 3, true), Out: nn.NewLinear(g, 3, 2, false)}}}
	}
	src := newModel()
	// The file torch would write: each weight transposed.
	var ts []*Tensor
	for _, r := range nn.Refs(src) {
		x := r.Tensor()
		if x.Rank() == 2 {
			x = x.Transpose(1, 0)
		}
		st, err := FromFrontend(r.Name, x, F32)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, st)
	}
	var buf bytes.Buffer
	if err := Encode(&buf, ts, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	dst := newModel()
	if err := Load(dst, f, LoadOptions{TorchLinear: true}); err != nil {
		t.Fatal(err)
	}
	for i, r := range nn.Refs(dst) {
		if want := nn.Refs(src)[i].Tensor(); !slices.Equal(r.Tensor().Shape(), want.Shape()) || !slices.Equal(r.Tensor().Float32s(), want.Float32s()) {
			t.Errorf("%s: %v, want %v", r.Name, r.Tensor().Float32s(), want.Float32s())
		}
	}
	err = Load(newModel(), f, LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), `"blocks.0.out.weight" has shape [2 3], the model's [3 2] (its transpose: a torch.nn.Linear weight [out, in]? set LoadOptions.TorchLinear)`) {
		t.Errorf("without TorchLinear: %v", err)
	}
	if got := len(nn.Modules[nn.Linear](dst)); got != 2 {
		t.Errorf("Modules found %d linear layers, want 2", got)
	}
}
