package nvptx

import (
	"fmt"
	"sort"
	"strings"
)

// intrinsic is the PTX of one intrinsic call: {d} is the result register,
// {0}, {1}… the arguments.
type intrinsic struct {
	ptx  string
	args int
}

// isAddress reports whether argument i is a memory address, `[{i}]`, so
// that an address plus a constant may be written there as [%rd+16].
func (in intrinsic) isAddress(i int) bool {
	return strings.Contains(in.ptx, fmt.Sprintf("[{%d}]", i))
}

// effectful are the prefixes of intrinsics that synchronize or move data.
var effectful = []string{"llvm.nvvm.barrier0", "llvm.nvvm.shfl.", "llvm.nvvm.mma.", "llvm.nvvm.ldmatrix.", "llvm.nvvm.cp.async."}

// immediateArgs are the prefixes of intrinsics whose arguments may be
// immediates: all of a shuffle's but the value, and all but the first of
// the float math ones.
var immediateArgs = map[string]int{"llvm.nvvm.shfl.": 0, "llvm.fma.": 1, "llvm.maxnum.": 1, "llvm.minnum.": 1,
	"llvm.maximum.": 1, "llvm.minimum.": 1}

// takesImmediate reports whether argument i of the intrinsic name may be
// an immediate.
func takesImmediate(name string, i int) bool {
	for p, from := range immediateArgs {
		if strings.HasPrefix(name, p) {
			return i >= from && !(p == "llvm.nvvm.shfl." && i == 1)
		}
	}
	return false
}

// isPure reports whether the intrinsic name is one of the table's that
// has no effect but its result, so that an unused call may be dropped.
func isPure(name string) bool {
	if _, ok := intrinsics[name]; !ok {
		return false
	}
	for _, p := range effectful {
		if strings.HasPrefix(name, p) {
			return false
		}
	}
	return true
}

// intrinsics are the calls the native backend selects. Each also lowers
// with llc-19 for nvptx64 (the tests check both), so targets/llvm may use
// any of them. LLVM's generic math such as llvm.exp.f32 is absent on
// purpose: NVPTX has no library to lower it to, and llc would emit an
// unresolved call.
var intrinsics = func() map[string]intrinsic {
	m := map[string]intrinsic{
		"llvm.nvvm.barrier0":             {"bar.sync 0;", 0},
		"llvm.nvvm.read.ptx.sreg.laneid": {"mov.u32 {d}, %laneid;", 0},

		// Approximate math (docs/ptx-math.md gives their errors).
		"llvm.nvvm.ex2.approx.f":     {"ex2.approx.f32 {d}, {0};", 1},
		"llvm.nvvm.ex2.approx.ftz.f": {"ex2.approx.ftz.f32 {d}, {0};", 1},
		"llvm.nvvm.lg2.approx.f":     {"lg2.approx.f32 {d}, {0};", 1},
		"llvm.nvvm.rsqrt.approx.f":   {"rsqrt.approx.f32 {d}, {0};", 1},
		"llvm.nvvm.sin.approx.f":     {"sin.approx.f32 {d}, {0};", 1},
		"llvm.nvvm.cos.approx.f":     {"cos.approx.f32 {d}, {0};", 1},
		"llvm.nvvm.rcp.approx.ftz.f": {"rcp.approx.ftz.f32 {d}, {0};", 1},

		// Correctly rounded operations.
		"llvm.nvvm.sqrt.rn.f": {"sqrt.rn.f32 {d}, {0};", 1},
		"llvm.nvvm.rcp.rn.f":  {"rcp.rn.f32 {d}, {0};", 1},
		"llvm.nvvm.rcp.rn.d":  {"rcp.rn.f64 {d}, {0};", 1},
	}
	for _, dim := range []string{"x", "y", "z"} {
		for _, sreg := range []string{"tid", "ctaid", "ntid", "nctaid"} {
			m["llvm.nvvm.read.ptx.sreg."+sreg+"."+dim] = intrinsic{fmt.Sprintf("mov.u32 {d}, %%%s.%s;", sreg, dim), 0}
		}
	}
	for _, mode := range []string{"bfly", "down", "up", "idx"} {
		for _, t := range []string{"f32", "i32"} {
			// (membermask, value, lane or offset, clamp) -> PTX order.
			m["llvm.nvvm.shfl.sync."+mode+"."+t] = intrinsic{"shfl.sync." + mode + ".b32 {d}, {1}, {2}, {3}, {0};", 4}
		}
	}
	// Tensor cores (sm_80): {d0}… are the registers of a struct result,
	// {c0} the value of a constant argument.
	m["llvm.nvvm.mma.m16n8k16.row.col.bf16"] = intrinsic{"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 " +
		"{{d0}, {d1}, {d2}, {d3}}, {{0}, {1}, {2}, {3}}, {{4}, {5}}, {{6}, {7}, {8}, {9}};", 10}
	// f16 operands arrive as <2 x half> vectors, packed back into .b32.
	m["llvm.nvvm.mma.m16n8k16.row.col.f32.f32"] = intrinsic{"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 " +
		"{{d0}, {d1}, {d2}, {d3}}, {{0}, {1}, {2}, {3}}, {{4}, {5}}, {{6}, {7}, {8}, {9}};", 10}
	for _, n := range []int{1, 2, 4} {
		d := "{d}"
		if n > 1 {
			regs := make([]string, n)
			for i := range regs {
				regs[i] = fmt.Sprintf("{d%d}", i)
			}
			d = "{" + strings.Join(regs, ", ") + "}"
		}
		for _, trans := range []string{"", "trans."} {
			m[fmt.Sprintf("llvm.nvvm.ldmatrix.sync.aligned.m8n8.x%d.%sb16", n, trans)] =
				intrinsic{fmt.Sprintf("ldmatrix.sync.aligned.m8n8.x%d.%sshared.b16 %s, [{0}];", n, trans, d), 1}
		}
	}
	m["llvm.nvvm.cp.async.cg.shared.global.16.s"] = intrinsic{"cp.async.cg.shared.global [{0}], [{1}], 16, {2};", 3}
	for _, n := range []int{4, 8, 16} {
		m[fmt.Sprintf("llvm.nvvm.cp.async.ca.shared.global.%d.s", n)] = intrinsic{fmt.Sprintf("cp.async.ca.shared.global [{0}], [{1}], %d, {2};", n), 3}
	}
	m["llvm.nvvm.cp.async.commit.group"] = intrinsic{"cp.async.commit_group;", 0}
	m["llvm.nvvm.cp.async.wait.group"] = intrinsic{"cp.async.wait_group {c0};", 1}

	for _, t := range []string{"f32", "f64"} {
		m["llvm.fabs."+t] = intrinsic{"abs." + t + " {d}, {0};", 1}
		m["llvm.sqrt."+t] = intrinsic{"sqrt.rn." + t + " {d}, {0};", 1}
		m["llvm.fma."+t] = intrinsic{"fma.rn." + t + " {d}, {0}, {1}, {2};", 3}
		// PTX min/max return the non-NaN operand, as minnum/maxnum do.
		m["llvm.minnum."+t] = intrinsic{"min." + t + " {d}, {0}, {1};", 2}
		m["llvm.maxnum."+t] = intrinsic{"max." + t + " {d}, {0}, {1};", 2}
		// max.NaN/min.NaN (sm_80) propagate NaN and order -0 below +0, as
		// llvm.maximum/llvm.minimum do; PTX has them for f32 only.
		if t == "f32" {
			m["llvm.maximum."+t] = intrinsic{"max.NaN." + t + " {d}, {0}, {1};", 2}
			m["llvm.minimum."+t] = intrinsic{"min.NaN." + t + " {d}, {0}, {1};", 2}
		}
		// PTX copysign takes the sign operand first.
		m["llvm.copysign."+t] = intrinsic{"copysign." + t + " {d}, {1}, {0};", 2}
		for name, mode := range map[string]string{"floor": "rmi", "ceil": "rpi", "trunc": "rzi", "rint": "rni", "nearbyint": "rni", "roundeven": "rni"} {
			m["llvm."+name+"."+t] = intrinsic{"cvt." + mode + "." + t + "." + t + " {d}, {0};", 1}
		}
	}
	return m
}()

// Intrinsics returns the names of the intrinsic functions the native
// backend selects, sorted.
func Intrinsics() []string {
	names := make([]string, 0, len(intrinsics))
	for n := range intrinsics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
