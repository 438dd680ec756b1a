package nvptx

import (
	"fmt"
	"sort"
)

// intrinsic is the PTX of one intrinsic call: {d} is the result register,
// {0}, {1}… the arguments.
type intrinsic struct {
	ptx  string
	args int
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
	for _, t := range []string{"f32", "f64"} {
		m["llvm.fabs."+t] = intrinsic{"abs." + t + " {d}, {0};", 1}
		m["llvm.sqrt."+t] = intrinsic{"sqrt.rn." + t + " {d}, {0};", 1}
		m["llvm.fma."+t] = intrinsic{"fma.rn." + t + " {d}, {0}, {1}, {2};", 3}
		// PTX min/max return the non-NaN operand, as minnum/maxnum do.
		m["llvm.minnum."+t] = intrinsic{"min." + t + " {d}, {0}, {1};", 2}
		m["llvm.maxnum."+t] = intrinsic{"max." + t + " {d}, {0}, {1};", 2}
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
