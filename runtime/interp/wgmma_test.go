package interp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
)

// TestWGMMALanes computes a 64×16·64 gpu.wgmma (K-major B) and a 64×64·16
// one (MN-major B, with C) from lane fragments laid out as the op's
// description says, with B stored in the 128-byte swizzle as written
// here (chunk c of row r at chunk c xor r%8), and both again with A read
// from workgroup memory (a_shared, A stored in the same swizzle, K-major),
// and checks every result.
func TestWGMMALanes(t *testing.T) {
	pack := func(lo, hi float64) Value {
		return i32Scalar(uint32(ir.FloatToBits(lo, ir.BF16)) | uint32(ir.FloatToBits(hi, ir.BF16))<<16)
	}
	av := func(m, k int) float64 { return float64((m*7+k*3)%11 - 5) }
	bv := func(k, n int) float64 { return float64((k*5+n)%9 - 4) }
	cv := func(m, n int) float64 { return float64(m - n) }
	const aAt = 4096 // (A's offset in the buffer, with a_shared)
	for _, c := range []struct {
		n, kSteps      int
		trans, aShared bool
	}{{16, 4, false, false}, {64, 1, true, false}, {16, 4, false, true}, {64, 1, true, true}} {
		t.Run(fmt.Sprintf("n%d-k%d-trans=%v-a_shared=%v", c.n, 16*c.kSteps, c.trans, c.aShared), func(t *testing.T) {
			nA, nD := 4*c.kSteps, c.n/2
			props := fmt.Sprintf("ab_type = bf16, k_steps = %d : i64, n = %d : i64", c.kSteps, c.n)
			var ops, types, res []string
			if c.aShared {
				nA = 2
				props += ", a_shared"
				ops, types = append(ops, "%b", "%o"), append(types, "memref<8192xbf16, 3>", "index")
			} else {
				for range nA {
					ops, types = append(ops, "%a"), append(types, "i32")
				}
			}
			ops, types = append(ops, "%b", "%o"), append(types, "memref<8192xbf16, 3>", "index")
			if c.trans {
				props += ", trans_b"
				for range nD {
					ops, types = append(ops, "%c"), append(types, "f32")
				}
			}
			for range nD {
				res = append(res, "f32")
			}
			op := warpOp(t, fmt.Sprintf(`func.func @f(%%a: i32, %%b: memref<8192xbf16, 3>, %%o: index, %%c: f32) {
  %%d:%d = "gpu.wgmma"(%s) <{%s}> : (%s) -> (%s)
  return
}`, nD, strings.Join(ops, ", "), props, strings.Join(types, ", "), strings.Join(res, ", ")), gpu.WGMMAOp)
			// B at offset 512: the stored matrix is N×K (K-major) or K×N.
			K := 16 * c.kSteps
			vals := make([]float64, 8192)
			for k := range K {
				for n := range c.n {
					r, col := n, k
					if c.trans {
						r, col = k, n
					}
					vals[512+r*64+((col/8)^(r%8))*8+col%8] = bv(k, n)
				}
			}
			if c.aShared {
				for m := range 64 {
					for k := range K {
						vals[aAt+m*64+((k/8)^(m%8))*8+k%8] = av(m, k)
					}
				}
			}
			bt, err := FromFloat64s(ir.BF16, []int64{8192}, vals)
			if err != nil {
				t.Fatal(err)
			}
			buf := BufferFromTensor(bt)
			args := make([][]Value, gpu.WarpgroupSize)
			for l := range args {
				w, g, t2 := l/32, l%32/4, 2*(l%4)
				for i := range nA {
					if c.aShared {
						args[l] = append(args[l], buf, index(aAt))
						break
					}
					ks, r := i/4, i%4
					row, col := 16*w+g+8*(r%2), 16*ks+t2+8*(r/2)
					args[l] = append(args[l], pack(av(row, col), av(row, col+1)))
				}
				args[l] = append(args[l], buf, index(512))
				if c.trans {
					for i := range nD {
						row, col := 16*w+g+8*(i%4/2), 8*(i/4)+t2+i%2
						args[l] = append(args[l], &Tensor{elem: ir.F32, data: []float32{float32(cv(row, col))}})
					}
				}
			}
			out, err := wgmmaLanes(op, args)
			if err != nil {
				t.Fatal(err)
			}
			for l := range out {
				w, g, t2 := l/32, l%32/4, 2*(l%4)
				for i, v := range out[l] {
					row, col := 16*w+g+8*(i%4/2), 8*(i/4)+t2+i%2
					want := 0.0
					if c.trans {
						want = cv(row, col)
					}
					for k := range K {
						want += av(row, k) * bv(k, col)
					}
					if got := float64(v.(*Tensor).data.([]float32)[0]); got != want {
						t.Fatalf("lane %d value %d (row %d, column %d) = %g, want %g", l, i, row, col, got, want)
					}
				}
			}
			// A thread of the warpgroup reading B elsewhere, or B off the
			// swizzle's 1024-byte alignment, is an error.
			args[5][nA+1] = index(0)
			if _, err := wgmmaLanes(op, args); err == nil || !strings.Contains(err.Error(), "thread 5") {
				t.Errorf("mismatched offsets: error %v", err)
			}
			for l := range args {
				args[l][nA+1] = index(8)
			}
			if _, err := wgmmaLanes(op, args); err == nil || !strings.Contains(err.Error(), "1024-byte aligned") {
				t.Errorf("misaligned B: error %v", err)
			}
			if c.aShared {
				for l := range args {
					args[l][nA+1] = index(512)
				}
				args[7][1] = index(0)
				if _, err := wgmmaLanes(op, args); err == nil || !strings.Contains(err.Error(), "thread 7 of the warpgroup reads A") {
					t.Errorf("mismatched A offsets: error %v", err)
				}
				for l := range args {
					args[l][1] = index(aAt + 8)
				}
				if _, err := wgmmaLanes(op, args); err == nil || !strings.Contains(err.Error(), "A at offset 4104 is not 1024-byte aligned") {
					t.Errorf("misaligned A: error %v", err)
				}
			}
		})
	}
}

// wgmmaKernel runs one gpu.wgmma (n 8, k 16, B zero) in a block of
// threads threads.
const wgmmaKernel = `module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @w(%out: memref<?xf32>) workgroup(%b : memref<512xbf16, 3>) kernel {
      %tid = gpu.thread_id x
      %a = arith.constant 1065369472 : i32
      %o = arith.constant 0 : index
      %d:4 = "gpu.wgmma"(%a, %a, %a, %a, %b, %o) <{ab_type = bf16, k_steps = 1 : i64, n = 8 : i64}> : (i32, i32, i32, i32, memref<512xbf16, 3>, index) -> (f32, f32, f32, f32)
      "gpu.fence_proxy_async"() : () -> ()
      loop.store %d#0, %out[%tid] : memref<?xf32>
      gpu.return
    }
  }
  func.func @main(%out: memref<?xf32>) {
    %c1 = arith.constant 1 : index
    %n = loop.dim %out, 0 : memref<?xf32>
    gpu.launch_func @k::@w blocks in (%c1, %c1, %c1) threads in (%n, %c1, %c1) args(%out : memref<?xf32>)
    return
  }
}
`

// TestGPUWGMMAWarpgroup runs gpu.wgmma in whole warpgroups (256 threads)
// and reports blocks whose last warpgroup is incomplete.
func TestGPUWGMMAWarpgroup(t *testing.T) {
	m := parseGPU(t, wgmmaKernel)
	for _, c := range []struct {
		threads int64
		want    string
	}{{256, ""}, {64, "needs the 128 threads of warpgroup 0, but the block has 64 threads"}, {160, "warpgroup 1"}} {
		out, _ := NewBuffer(ir.F32, []int64{c.threads})
		_, err := New(m).Call("main", out)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%d threads: %v", c.threads, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%d threads: error %v, want %q", c.threads, err, c.want)
		}
	}
}
