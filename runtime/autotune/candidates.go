package autotune

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/togpu"
)

// Kernel is one kernel's launch parameters as convert-loop-to-gpu
// recorded them in togpu.LaunchAttr.
type Kernel struct {
	Name         string
	Mapping      string // togpu.MappingPointwise, MappingRow or MappingMMA
	Block        int64
	Vector       int64
	RowsPerBlock int64
	// NoUnroll reports inner loops marked loop.no_unroll (the default
	// without unroll-inner): the unrolled form is then a candidate.
	NoUnroll bool
}

// Kernels returns the kernels of a gpu-level module that carry
// togpu.LaunchAttr, in module order.
func Kernels(module *ir.Operation) []Kernel {
	var ks []Kernel
	module.Walk(func(op *ir.Operation) bool {
		if op.Name() != gpu.FuncOp {
			return true
		}
		d, ok := op.Attr(togpu.LaunchAttr).(ir.DictAttr)
		if !ok {
			return false
		}
		k := Kernel{Name: ir.SymbolName(op)}
		k.Mapping, _ = stringOf(d.Get("mapping"))
		k.Block = intOf(d.Get("block"))
		k.Vector = intOf(d.Get("vector"))
		k.RowsPerBlock = intOf(d.Get("rows_per_block"))
		op.Walk(func(o *ir.Operation) bool {
			k.NoUnroll = k.NoUnroll || o.Name() == loop.ForOp && o.Attr(loop.NoUnrollAttr) != nil
			return !k.NoUnroll
		})
		ks = append(ks, k)
		return false
	})
	return ks
}

func intOf(a ir.Attribute) int64 {
	i, _ := a.(ir.IntegerAttr)
	return i.Value
}

func stringOf(a ir.Attribute) (string, bool) {
	s, ok := a.(ir.StringAttr)
	return s.Value, ok
}

// The values searched.
var (
	blocks       = []int64{128, 256, 512, 1024}
	vectors      = []int64{1, 4}
	rowsPerBlock = []int64{1, 2, 4, 8}
	// maxBlocks: the default cap, and a grid of a few waves on a large GPU
	// whose threads loop (fewer, longer-lived blocks).
	maxBlocks = []int64{togpu.DefaultConfig.MaxBlocks, 2048}
	// indexBits: the default width of the pointwise and row kernels'
	// index arithmetic, then the other one (32 is used only where it is
	// provably exact).
	indexBits = []int64{togpu.DefaultConfig.IndexBits, map[int64]int64{32: 64, 64: 32}[togpu.DefaultConfig.IndexBits]}
)

// Candidates returns the configurations worth timing for kernels (from
// the default configuration's compile), the default first and without
// duplicates: a parameter varies only when some kernel uses it.
func Candidates(kernels []Kernel) []togpu.Config {
	def := togpu.DefaultConfig
	var pointwise, vectorized, blockRows, warpRows, mma, noUnroll bool
	for _, k := range kernels {
		noUnroll = noUnroll || k.NoUnroll
		switch k.Mapping {
		case togpu.MappingMMA:
			mma = true
		case togpu.MappingPointwise:
			pointwise = true
			vectorized = vectorized || k.Vector > 1
		case togpu.MappingRow:
			// The default picks a warp per row for short rows.
			if k.RowsPerBlock > 1 {
				warpRows = true
			} else {
				blockRows = true
			}
		}
	}
	bs, vs, rs, ms := []int64{def.Block}, []int64{def.Vector}, []int64{def.RowsPerBlock}, []int64{def.MaxBlocks}
	if pointwise || blockRows {
		bs = blocks
	}
	if vectorized {
		vs = vectors
	}
	if warpRows {
		rs = append([]int64{def.RowsPerBlock}, rowsPerBlock...)
	}
	if pointwise {
		ms = maxBlocks
	}
	ibs := []int64{def.IndexBits}
	if pointwise || blockRows || warpRows {
		ibs = indexBits
	}
	tiles := []togpu.MMATile{def.MMATile}
	if mma {
		tiles = togpu.MMATiles
	}
	out := []togpu.Config{def}
	for _, ib := range ibs {
		for _, b := range bs {
			for _, v := range vs {
				for _, r := range rs {
					for _, m := range ms {
						for _, t := range tiles {
							c := def // parameters not searched keep their defaults
							c.Block, c.Vector, c.RowsPerBlock, c.MaxBlocks, c.MMATile, c.IndexBits = b, v, r, m, t, ib
							if !slices.Contains(out, c) {
								out = append(out, c)
							}
						}
					}
				}
			}
		}
	}
	// The default with the other index width comes second, so that the
	// time budget never skips it; its variations come last.
	if len(ibs) > 1 {
		c := def
		c.IndexBits = ibs[1]
		i := slices.Index(out, c)
		out = slices.Insert(slices.Delete(out, i, i+1), 1, c)
	}
	// Loops the default keeps rolled (a smaller JIT) are tried unrolled,
	// right after the default.
	if noUnroll {
		c := def
		c.UnrollInner = true
		out = slices.Insert(out, 1, c)
	}
	return out
}

// ConfigString prints cfg as convert-loop-to-gpu's options; mma-tile,
// matmul, conv, index-bits and unroll-inner only when they are not the default, so that
// decisions recorded before the options existed read the same.
func ConfigString(cfg togpu.Config) string {
	s := fmt.Sprintf("block=%d vector=%d rows-per-block=%d max-blocks=%d", cfg.Block, cfg.Vector, cfg.RowsPerBlock, cfg.MaxBlocks)
	if cfg.MMATile != togpu.DefaultConfig.MMATile {
		s += " mma-tile=" + cfg.MMATile.String()
	}
	if cfg.CuBLASLt {
		s += " matmul=" + togpu.MatmulCuBLASLt
	}
	if cfg.CuDNN {
		s += " conv=" + togpu.ConvCuDNN
	}
	if cfg.IndexBits != togpu.DefaultConfig.IndexBits {
		s += fmt.Sprintf(" index-bits=%d", cfg.IndexBits)
	}
	if cfg.UnrollInner != togpu.DefaultConfig.UnrollInner {
		s += fmt.Sprintf(" unroll-inner=%v", cfg.UnrollInner)
	}
	return s
}

// ParseConfig reads ConfigString's form; every integer option must be
// present, and parameters not searched keep their defaults.
func ParseConfig(s string) (togpu.Config, error) {
	cfg := togpu.DefaultConfig
	fields := map[string]*int64{"block": &cfg.Block, "vector": &cfg.Vector, "rows-per-block": &cfg.RowsPerBlock, "max-blocks": &cfg.MaxBlocks}
	seen := 0
	for _, f := range strings.Fields(s) {
		name, val, ok := strings.Cut(f, "=")
		if ok && name == "mma-tile" {
			t, err := togpu.ParseMMATile(val)
			if err != nil {
				return cfg, fmt.Errorf("autotune: configuration %q: %w", s, err)
			}
			cfg.MMATile = t
			continue
		}
		if ok && name == "matmul" && (val == togpu.MatmulCuBLASLt || val == togpu.MatmulMMA) {
			cfg.CuBLASLt = val == togpu.MatmulCuBLASLt
			continue
		}
		if ok && name == "conv" && (val == togpu.ConvCuDNN || val == togpu.ConvMMA) {
			cfg.CuDNN = val == togpu.ConvCuDNN
			continue
		}
		if ok && name == "index-bits" && (val == "32" || val == "64") {
			cfg.IndexBits, _ = strconv.ParseInt(val, 10, 64)
			continue
		}
		if ok && name == "unroll-inner" && (val == "true" || val == "false") {
			cfg.UnrollInner = val == "true"
			continue
		}
		p := fields[name]
		if !ok || p == nil {
			return cfg, fmt.Errorf("autotune: bad configuration field %q in %q", f, s)
		}
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return cfg, fmt.Errorf("autotune: configuration field %q: %w", f, err)
		}
		*p = n
		seen++
	}
	if seen != len(fields) {
		return cfg, fmt.Errorf("autotune: configuration %q lacks fields (want %s)", s, ConfigString(togpu.DefaultConfig))
	}
	return cfg, nil
}

// GPUPipeline is the pipeline taking a loop-level module to the gpu level
// with cfg: convert-loop-to-gpu with cfg's options, and what lower-to-gpu
// runs before and after it.
func GPUPipeline(cfg togpu.Config) string {
	return togpu.BeforeConversion + "," + togpu.PassName + "{" + ConfigString(cfg) + "}," + togpu.AfterConversion
}
