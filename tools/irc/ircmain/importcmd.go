package ircmain

import (
	"github.com/strata-ir/strata/internal/atomicfile"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	hlo "github.com/strata-ir/strata/dialects/stablehlo"
	"github.com/strata-ir/strata/importers/onnx"
	"github.com/strata-ir/strata/importers/stablehlo"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/runtime/npy"
)

// importers maps a model file's extension to the importer that turns it
// into a module (irc import, and irc run FILE.onnx). inputs are the .npy
// files irc run will pass: an import that fails with symbolic sizes (a
// reshape needing several) is retried specialised to their shapes.
var importers = map[string]func(ctx *ir.Context, path, funcName string, inputs []string) (*ir.Operation, error){
	".onnx": func(ctx *ir.Context, path, funcName string, inputs []string) (*ir.Operation, error) {
		mod, err := onnx.Import(ctx, path, onnx.Options{FuncName: funcName})
		if err == nil || len(inputs) == 0 {
			return mod, err
		}
		shapes := make([][]int64, len(inputs))
		for i, in := range inputs {
			arr, rerr := npy.ReadFile(in)
			if rerr != nil {
				return nil, err
			}
			shapes[i] = arr.Shape
		}
		m, rerr := onnx.ReadModel(path)
		if rerr != nil {
			return nil, err
		}
		dims, rerr := onnx.DimsFor(m, shapes)
		if rerr != nil || len(dims) == 0 {
			return nil, err
		}
		if mod, rerr := onnx.Import(ctx, path, onnx.Options{FuncName: funcName, Dims: dims}); rerr == nil {
			return mod, nil
		}
		return nil, err
	},
}

// convertStableHLO rewrites the stablehlo ops of mod, if it has any, into
// graph ops (convert-stablehlo-to-graph).
func convertStableHLO(ctx *ir.Context, mod *ir.Operation) error {
	has := false
	mod.Walk(func(op *ir.Operation) bool {
		has = has || strings.HasPrefix(op.Name(), hlo.Name+".")
		return !has
	})
	if !has {
		return nil
	}
	if err := stablehlo.Convert(ctx, mod); err != nil {
		return err
	}
	// JAX exports call private functions of their own (relu, …); the
	// compiling backends take graphs without calls, as the frontend
	// records them.
	pm, err := passes.Parse("builtin.module(inline)")
	if err != nil {
		return err
	}
	if err := pm.Run(ctx, mod); err != nil {
		return err
	}
	return ir.Verify(mod)
}

// bindWeights lifts the weights of an imported model's @main to trailing
// arguments and returns their values, for the backends that compile (the
// lowering fills constant buffers on the host, which the nvptx executor
// does not run).
func bindWeights(mod *ir.Operation) ([]interp.Value, error) {
	fn := ir.LookupSymbol(mod, ir.SymbolRef("main"))
	if fn == nil {
		return nil, nil
	}
	ds, err := onnx.LiftWeights(fn)
	if err != nil {
		return nil, err
	}
	out := make([]interp.Value, len(ds))
	for i, d := range ds {
		if out[i], err = interp.FromBits(d.Type.ElementType(), d.Type.Shape(), d.Bits); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// importerFor returns the importer of a model file, or nil for a file irc
// parses as IR.
func importerFor(path string) func(ctx *ir.Context, path, funcName string, inputs []string) (*ir.Operation, error) {
	return importers[strings.ToLower(filepath.Ext(path))]
}

// importCmd is irc import: convert a model file (ONNX, or StableHLO text
// from JAX) into a graph-dialect module, written as text. The output file
// is written whole or not at all.
func (t *tool) importCmd(args []string) int {
	fs := newFlagSet(t.name + " import")
	output := fs.String("o", "-", "write the module to `file` ('-': standard output)")
	funcName := fs.String("func", "main", "name the imported function `name`")
	var dimFlags stringList
	fs.Var(&dimFlags, "dim", "give the ONNX dim_param `name=size` a static size (repeat): for models whose reshapes need several symbolic sizes")
	positional, status, ok := t.parseFlags(fs, t.name+" import MODEL.onnx|JAX.mlir [-o OUT.mlir] [--func NAME] [--dim NAME=SIZE]...", args)
	if !ok {
		return status
	}
	if len(positional) != 1 {
		return t.usageErrorf("import: expected one model file, got %d", len(positional))
	}
	path := positional[0]
	isMLIR := strings.EqualFold(filepath.Ext(path), ".mlir")
	if importerFor(path) == nil && !isMLIR {
		return t.usageErrorf("import: %s: unknown model format (want .onnx, or .mlir holding StableHLO)", path)
	}
	if _, err := os.Stat(path); err != nil {
		return t.usageErrorf("import: %v", err)
	}
	dims := map[string]int64{}
	for _, d := range dimFlags {
		name, size, ok := strings.Cut(d, "=")
		v, err := strconv.ParseInt(size, 10, 64)
		if !ok || name == "" || err != nil || v < 0 {
			return t.usageErrorf("import: --dim %q must be name=size with a size >= 0", d)
		}
		dims[name] = v
	}
	ctx := t.newContext(false)
	write := func(w io.Writer) error {
		return onnx.WriteMLIR(w, ctx, path, onnx.Options{FuncName: *funcName, Dims: dims})
	}
	if isMLIR {
		name, text, err := t.readInput(path)
		if err != nil {
			return t.usageErrorf("import: %v", err)
		}
		mod, err := ir.Parse(ctx, text, ir.ParseOptions{Filename: name})
		if err == nil {
			err = ir.Verify(mod)
		}
		if err == nil {
			err = stablehlo.Convert(ctx, mod)
		}
		if err == nil {
			err = ir.Verify(mod)
		}
		if err != nil {
			src := newSource(name, text)
			for _, d := range diagnostics(err) {
				src.write(t.stderr, d)
			}
			return ExitDiagnostics
		}
		write = func(w io.Writer) error { return ir.Print(w, mod, ir.PrintOptions{Generic: true}) }
	}
	var err error
	if *output == "-" {
		err = write(t.stdout)
	} else {
		err = atomicfile.Write(*output, write)
	}
	if err != nil {
		return t.errorf("import: %v", err)
	}
	return ExitOK
}
