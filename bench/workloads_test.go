package bench

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/npy"
)

// smallInputs draws the inputs of every variant, as arrays and as float64.
func smallInputs(t *testing.T, w *Workload, inst *Instance) ([][]*npy.Array, [][][]float64) {
	t.Helper()
	arrs := make([][]*npy.Array, len(inst.Variants))
	vals := make([][][]float64, len(inst.Variants))
	for vi, v := range inst.Variants {
		for _, spec := range v.Inputs {
			f32 := MakeInput(spec, 7, w.Name+"/"+v.Label+"/"+spec.Name)
			a, err := ToNPY(spec, f32)
			if err != nil {
				t.Fatal(err)
			}
			f64, err := FromNPY(spec, a)
			if err != nil {
				t.Fatal(err)
			}
			arrs[vi] = append(arrs[vi], a)
			vals[vi] = append(vals[vi], f64)
		}
	}
	return arrs, vals
}

// matchReference runs module (inst's program, at any level the interpreter
// runs) on every variant's inputs and checks its outputs against the
// float64 reference, within w's tolerance.
func matchReference(t *testing.T, w *Workload, inst *Instance, ctx *ir.Context, module *ir.Operation) {
	t.Helper()
	prog, err := Interp{}.Compile(ctx, module, inst.Entry, "default")
	if err != nil {
		t.Fatal(err)
	}
	arrs, vals := smallInputs(t, w, inst)
	want, err := referenceOutputs(w, inst, vals)
	if err != nil {
		t.Fatal(err)
	}
	for vi, v := range inst.Variants {
		got, err := prog.Run(arrs[vi])
		if err != nil {
			t.Fatalf("variant %q: %v", v.Label, err)
		}
		if len(got) != len(v.Outputs) {
			t.Fatalf("variant %q: %d results, want %d", v.Label, len(got), len(v.Outputs))
		}
		for oi, o := range v.Outputs {
			g, err := FromNPY(o, got[oi])
			if err != nil {
				t.Fatal(err)
			}
			c, err := Compare(g, want[vi][oi], w.Tol)
			if err != nil {
				t.Fatal(err)
			}
			if !c.OK {
				t.Errorf("variant %q output %s: %+v", v.Label, o.Name, c)
			}
		}
	}
}

// Every workload parses, verifies and, at the small size, computes in the
// interpreter what the float64 reference computes, within its tolerance.
func TestWorkloadsMatchReference(t *testing.T) {
	for _, w := range Workloads {
		t.Run(w.Name, func(t *testing.T) {
			inst, err := w.Build(Small)
			if err != nil {
				t.Fatal(err)
			}
			ctx, module, err := Load(inst)
			if err != nil {
				t.Fatalf("%v\n%s", err, inst.Program)
			}
			matchReference(t, w, inst, ctx, module)
		})
	}
}

// The full sizes are the ones DESIGN §11 names, and their byte and flop
// counts the ones the anchor measurements used.
func TestFullSizes(t *testing.T) {
	want := map[string]struct {
		bytes, flops int64
		shape        string
	}{
		"pointwise":             {bytes: 4 * 64 << 20 * 4, shape: "tensor<67108864xf32>"},
		"softmax":               {bytes: 2 * 8192 * 8192 * 4, shape: "tensor<8192x8192xf32>"},
		"layernorm":             {bytes: 2*16384*4096*4 + 2*4096*4, shape: "tensor<16384x4096xf32>"},
		"rowsum":                {bytes: 16384*8192*4 + 16384*4, shape: "tensor<16384x8192xf32>"},
		"mm_bias_gelu":          {flops: 2 * 8192 * 4096 * 4096, shape: "tensor<8192x4096xbf16>"},
		"gemm_own_bf16":         {flops: 2 * 8192 * 8192 * 8192, shape: "tensor<8192x8192xbf16>"},
		"attention":             {flops: 4 * 16 * 16 * 1024 * 1024 * 64, shape: "tensor<16x16x1024x64xbf16>"},
		"attention_d128":        {flops: 4 * 16 * 16 * 1024 * 1024 * 128, shape: "tensor<16x16x1024x128xbf16>"},
		"attention_causal":      {flops: 2 * 16 * 16 * 1024 * 1024 * 64, shape: "tensor<16x16x1024x64xbf16>"},
		"attention_causal_d128": {flops: 2 * 16 * 16 * 1024 * 1024 * 128, shape: "tensor<16x16x1024x128xbf16>"},
		"tiny_chain":            {bytes: 2 * 4096 * 4, shape: "tensor<4096xf32>"},
		"mlp_train":             {flops: 10 * 8192 * 4096 * 16384, shape: "tensor<4096x16384xbf16>"},
		"attention_train":       {flops: 7 * 16 * 16 * 1024 * 1024 * 64, shape: "tensor<16x16x1024x64xbf16>"},
		"attention_train_d128":  {flops: 7 * 16 * 16 * 1024 * 1024 * 128, shape: "tensor<16x16x1024x128xbf16>"},
		"conv3x3_bn_relu":       {flops: 2 * 64 * 64 * 56 * 56 * 64 * 9, shape: "tensor<64x64x56x56xbf16>"},
		"conv1x1_bn_relu":       {flops: 2 * 64 * 64 * 56 * 56 * 256, shape: "tensor<64x256x56x56xbf16>"},
		"softmax_dynamic":       {bytes: 2 * (1000 + 2000 + 3001 + 4096 + 8191) * 4096 * 4, shape: "tensor<1000x4096xf32>"},
	}
	if len(want) != len(Workloads) {
		t.Fatalf("%d workloads, the test knows %d", len(Workloads), len(want))
	}
	for _, w := range Workloads {
		inst, err := w.Build(Full)
		if err != nil {
			t.Fatal(err)
		}
		wt := want[w.Name]
		if inst.Bytes != wt.bytes || inst.Flops != wt.flops {
			t.Errorf("%s: bytes %d flops %d, want %d %d", w.Name, inst.Bytes, inst.Flops, wt.bytes, wt.flops)
		}
		if !strings.Contains(inst.Program, wt.shape) {
			t.Errorf("%s: program lacks %s:\n%s", w.Name, wt.shape, inst.Program)
		}
		if Lookup(w.Name) != w {
			t.Errorf("Lookup(%q) does not find it", w.Name)
		}
	}
	if n := len(mustBuild(t, "softmax_dynamic").Variants); n != 5 {
		t.Errorf("softmax_dynamic has %d sizes, want 5", n)
	}
}

func mustBuild(t *testing.T, name string) *Instance {
	t.Helper()
	inst, err := Lookup(name).Build(Full)
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// The dynamic softmax is compiled for a symbolic row count.
func TestSoftmaxDynamicIsSymbolic(t *testing.T) {
	inst, err := Lookup("softmax_dynamic").Build(Small)
	if err != nil {
		t.Fatal(err)
	}
	_, module, err := Load(inst)
	if err != nil {
		t.Fatal(err)
	}
	if s := module.String(); !strings.Contains(s, "tensor<?x16xf32") {
		t.Errorf("leading dim not symbolic:\n%s", s)
	}
}
