package frontend_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/runtime/cpu"
)

// This file is an adversarial differential test of compiled calls
// against eager ones (issue 19's "never stale"): Go programs in the style
// of ordinary user code (closures, struct fields, methods, globals, host
// reads, loops, in-place updates, randomness, shape changes, errors)
// run a sequence of calls with their Go state changed between calls,
// and every compiled call (every backend, Dynamic setting and Fullgraph)
// must give what running the Go function eagerly on identical state
// gives, or — only where the program reads tensors on the host under
// Fullgraph — a graph-break error.

// advProg is one program: a function and the Go state it reads. A case
// builds two of them (two identical worlds), one run eagerly, one
// compiled.
type advProg struct {
	fn any
	// before changes the Go state before call i (identically in both
	// worlds); nil: nothing.
	before func(i int)
	// args are the arguments of call i.
	args func(i int) []any
	// state is the tensors and Go values compared after every call (the
	// state fn updates in place, rebinds or appends to).
	state func() []any
	// breaks: fn reads tensors on the host (Fullgraph may refuse it).
	breaks bool
	// opts adjusts the compile options.
	opts func(*frontend.Options)
	// ctl acts on the compiled function before call i (Disable, Reset…).
	ctl func(c *frontend.Compiled, i int)
	// after sees the results of each successful call (to feed them back).
	after func(res []any)
}

type advCase struct {
	name  string
	calls int
	build func() *advProg
}

// advValues flattens results and state into comparable leaves.
func advValues(t *testing.T, v any, out *[]string) {
	t.Helper()
	switch x := v.(type) {
	case nil:
		*out = append(*out, "nil")
	case *frontend.Tensor:
		if x == nil {
			*out = append(*out, "nil-tensor")
			return
		}
		if x.Err() != nil {
			*out = append(*out, "tensor-error")
			return
		}
		fs := x.Float64s()
		if x.Err() != nil {
			*out = append(*out, "tensor-error")
			return
		}
		*out = append(*out, fmt.Sprintf("T%v%v", x.DType(), x.Shape()))
		for _, f := range fs {
			*out = append(*out, fmt.Sprintf("f%.4g", f))
		}
	case error:
		*out = append(*out, "error")
	default:
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.Slice, reflect.Array:
			*out = append(*out, fmt.Sprintf("[%d", rv.Len()))
			for i := range rv.Len() {
				advValues(t, rv.Index(i).Interface(), out)
			}
		case reflect.Map:
			keys := rv.MapKeys()
			sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
			*out = append(*out, fmt.Sprintf("{%d", rv.Len()))
			for _, k := range keys {
				*out = append(*out, fmt.Sprint(k))
				advValues(t, rv.MapIndex(k).Interface(), out)
			}
		case reflect.Pointer:
			if rv.IsNil() {
				*out = append(*out, "nil")
				return
			}
			advValues(t, rv.Elem().Interface(), out)
		case reflect.Struct:
			for i := range rv.NumField() {
				if rv.Type().Field(i).IsExported() {
					advValues(t, rv.Field(i).Interface(), out)
				}
			}
		case reflect.Float32, reflect.Float64:
			*out = append(*out, fmt.Sprintf("f%.4g", rv.Float()))
		default:
			*out = append(*out, fmt.Sprint(v))
		}
	}
}

// advClose compares two flattened leaves, numbers within a tolerance.
func advClose(a, b string) bool {
	if a == b {
		return true
	}
	if !strings.HasPrefix(a, "f") || !strings.HasPrefix(b, "f") {
		return false
	}
	var x, y float64
	if _, err := fmt.Sscan(a[1:], &x); err != nil {
		return false
	}
	if _, err := fmt.Sscan(b[1:], &y); err != nil {
		return false
	}
	if math.IsNaN(x) && math.IsNaN(y) {
		return true
	}
	return math.Abs(x-y) <= 2e-3*(1+math.Abs(x))
}

// runEagerly calls fn as plain Go code, a panic or a trailing error
// being the error.
func runEagerly(fn any, args []any) (res []any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	fv := reflect.ValueOf(fn)
	in := make([]reflect.Value, len(args))
	for i, a := range args {
		if a == nil {
			in[i] = reflect.Zero(fv.Type().In(i))
		} else {
			in[i] = reflect.ValueOf(a)
		}
	}
	out := fv.Call(in)
	if n := len(out); n > 0 && fv.Type().Out(n-1) == reflect.TypeFor[error]() {
		if !out[n-1].IsNil() {
			err = out[n-1].Interface().(error)
		}
		out = out[:n-1]
	}
	for _, o := range out {
		res = append(res, o.Interface())
	}
	for _, r := range res {
		if tt, ok := r.(*frontend.Tensor); ok && tt != nil && tt.Err() != nil && err == nil {
			err = tt.Err()
		}
	}
	return res, err
}

// advConfig is one way of compiling.
type advConfig struct {
	backend   string
	dynamic   frontend.Dynamic
	fullgraph bool
	mode      frontend.Mode
}

func advConfigs() []advConfig {
	var cs []advConfig
	for _, be := range []string{frontend.InterpBackend, frontend.EagerBackend, frontend.AOTEagerBackend, fakeDevice()} {
		for _, d := range []frontend.Dynamic{frontend.DynamicAuto, frontend.DynamicTrue, frontend.DynamicFalse} {
			for _, fg := range []bool{false, true} {
				cs = append(cs, advConfig{be, d, fg, ""})
			}
		}
	}
	// The modes other than default, once each.
	cs = append(cs, advConfig{frontend.AOTEagerBackend, frontend.DynamicAuto, false, frontend.ModeReduceOverhead},
		advConfig{frontend.InterpBackend, frontend.DynamicTrue, false, frontend.ModeMaxAutotune})
	// The cpu backend compiles every graph with LLVM (seconds each on
	// this machine): one configuration, where the tools are present.
	if _, err := cpu.FindTools(); err == nil && os.Getenv("STRATA_ADV_CPU") != "" {
		cs = append(cs, advConfig{frontend.CPUBackend, frontend.DynamicAuto, false, ""})
	}
	return cs
}

// advReplays counts, per case, the calls replayed over all configs.
var advReplays = map[string]int{}

// advInject, when set, wraps every program's function so that call 2
// fails (a panic on entry: fn does not run) in both worlds.
var advInject bool

// advInjectAfter makes the injected failure come after fn ran (its side
// effects on Go state done).
var advInjectAfter bool

// advInjected returns fn wrapped to panic on its call number k (from 0).
func advInjected(fn any, k int) any {
	fv := reflect.ValueOf(fn)
	n := 0
	return reflect.MakeFunc(fv.Type(), func(args []reflect.Value) []reflect.Value {
		n++
		if n-1 == k && !advInjectAfter {
			panic("injected failure")
		}
		var out []reflect.Value
		if fv.Type().IsVariadic() {
			out = fv.CallSlice(args)
		} else {
			out = fv.Call(args)
		}
		if n-1 == k {
			panic("injected failure after fn ran")
		}
		return out
	}).Interface()
}

func runAdvCase(t *testing.T, tc advCase) {
	configs := advConfigs()
	if advInject {
		configs = []advConfig{{frontend.InterpBackend, frontend.DynamicAuto, false, ""}, {frontend.AOTEagerBackend, frontend.DynamicTrue, true, ""}}
	}
	for _, cfg := range configs {
		name := fmt.Sprintf("%s/%s/dyn=%v/fg=%v", tc.name, cfg.backend, cfg.dynamic, cfg.fullgraph)
		if cfg.mode != "" {
			name += "/" + string(cfg.mode)
		}
		t.Run(name, func(t *testing.T) {
			eager, comp := tc.build(), tc.build()
			if advInject {
				eager.fn, comp.fn = advInjected(eager.fn, 2), advInjected(comp.fn, 2)
			}
			opts := frontend.Options{Backend: cfg.backend, Dynamic: cfg.dynamic, Fullgraph: cfg.fullgraph, Mode: cfg.mode}
			if comp.opts != nil {
				comp.opts(&opts)
			}
			c, err := frontend.Compile(comp.fn, opts)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			frontend.Seed(7)
			// Every result is kept and compared again after the last
			// call (with eager's, kept too): a later call must not
			// overwrite an earlier result.
			type kept struct{ eager, comp []any }
			var keep []kept
			defer func() {
				if t.Failed() {
					return
				}
				for i, k := range keep {
					var e, g []string
					advValues(t, k.eager, &e)
					advValues(t, k.comp, &g)
					if len(e) != len(g) {
						t.Fatalf("after the last call, the results of call %d differ:\n eager    %v\n compiled %v", i, e, g)
					}
					for j := range e {
						if !advClose(e[j], g[j]) {
							t.Fatalf("after the last call, the results of call %d differ:\n eager    %v\n compiled %v", i, e, g)
						}
					}
				}
			}()
			defer func() { advReplays[tc.name] += c.Stats().Replays }()
			for i := range tc.calls {
				if eager.before != nil {
					eager.before(i)
				}
				seed, off := frontend.RandState()
				eres, eerr := runEagerly(eager.fn, eager.args(i))
				wantSeed, wantOff := frontend.RandState()
				frontend.SetRandState(seed, off)
				if comp.before != nil {
					comp.before(i)
				}
				if comp.ctl != nil {
					comp.ctl(c, i)
				}
				cres, cerr := c.Invoke(comp.args(i)...)
				if gs, gof := frontend.RandState(); (gs != wantSeed || gof != wantOff) && cerr == nil {
					t.Fatalf("call %d: random state %d/%d after the compiled call, %d/%d eagerly", i, gs, gof, wantSeed, wantOff)
				}
				frontend.SetRandState(wantSeed, wantOff)
				if eerr != nil {
					if cerr == nil {
						t.Fatalf("call %d: eager failed (%v), compiled did not", i, eerr)
					}
					continue
				}
				if cerr != nil {
					if cfg.fullgraph && eager.breaks && strings.Contains(cerr.Error(), "Fullgraph") {
						return // the documented refusal: the worlds part here
					}
					t.Fatalf("call %d: compiled failed, eager did not: %v", i, cerr)
				}
				var ev, cv []string
				advValues(t, eres, &ev)
				advValues(t, cres, &cv)
				var es, cs []string
				if eager.state != nil {
					advValues(t, eager.state(), &es)
					advValues(t, comp.state(), &cs)
				}
				cmp := func(what string, e, g []string) {
					t.Helper()
					if len(e) != len(g) {
						t.Fatalf("call %d: %s differ:\n eager    %v\n compiled %v", i, what, e, g)
					}
					for j := range e {
						if !advClose(e[j], g[j]) {
							t.Fatalf("call %d: %s differ at leaf %d:\n eager    %v\n compiled %v", i, what, j, e, g)
						}
					}
				}
				cmp("results", ev, cv)
				if eager.after != nil {
					eager.after(eres)
					comp.after(cres)
				}
				keep = append(keep, kept{eres, cres})
				cmp("state", es, cs)
			}
		})
	}
}

func fs(xs ...float32) *frontend.Tensor { return frontend.FromSlice(xs) }

// advSeq is a deterministic sequence of inputs: call i's vector of n
// elements, signs varying.
func advSeq(i, n int) *frontend.Tensor {
	xs := make([]float32, n)
	for j := range xs {
		xs[j] = float32(math.Sin(float64(i*7+j*3+1))) * 2
	}
	return frontend.FromSlice(xs)
}

// Package-level state read by compiled functions.
var (
	advGlobalScale float32 = 1
	advGlobalW     *frontend.Tensor
	advGlobalMode  = "relu"
)

type advInner struct {
	W *frontend.Tensor
	K int
}

type advModel struct {
	In     advInner
	Bias   *frontend.Tensor
	Layers []*frontend.Tensor
	Named  map[string]*frontend.Tensor
	Train  bool
	Steps  *frontend.Tensor
}

func (m *advModel) Forward(x *frontend.Tensor) *frontend.Tensor {
	h := x
	for range m.In.K {
		h = h.Mul(m.In.W).Tanh()
	}
	for _, l := range m.Layers {
		h = h.Add(l)
	}
	for _, k := range sortedKeys(m.Named) {
		h = h.Sub(m.Named[k])
	}
	if m.Train {
		h = h.Add(m.Bias)
	}
	return h
}

func (m advModel) ValueForward(x *frontend.Tensor) *frontend.Tensor {
	return x.Mul(m.In.W).Add(m.Bias)
}

func sortedKeys(m map[string]*frontend.Tensor) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func newAdvModel() *advModel {
	return &advModel{
		In:     advInner{W: fs(0.5, -1, 2), K: 1},
		Bias:   fs(0.1, 0.2, 0.3),
		Layers: []*frontend.Tensor{fs(1, 1, 1)},
		Named:  map[string]*frontend.Tensor{"b": fs(0, 1, 0)},
		Steps:  fs(0),
	}
}

var advCases = []advCase{
	{"bool-flip", 8, func() *advProg {
		flag := false
		return &advProg{
			fn:     func(x *frontend.Tensor) *frontend.Tensor { return pick(flag, x.Neg(), x.Abs()).Tanh() },
			before: func(i int) { flag = i%3 == 1 },
			args:   func(i int) []any { return []any{advSeq(i, 3)} },
		}
	}},
	{"bool-branch-structure", 8, func() *advProg {
		flag := false
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				if flag {
					return x.Neg()
				}
				return x.Abs()
			},
			before: func(i int) { flag = i%2 == 0 },
			args:   func(i int) []any { return []any{advSeq(i, 3)} },
		}
	}},
	{"int-tripcount-incl-zero", 9, func() *advProg {
		k := 0
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				for range k {
					x = x.Mul(x).Sub(fs(0.5, 0.5, 0.5)).Tanh()
				}
				return x
			},
			before: func(i int) { k = []int{0, 2, 1, 0, 3, 2, 2, 0, 1}[i] },
			args:   func(i int) []any { return []any{advSeq(i, 3)} },
		}
	}},
	{"float32-scalar-const", 7, func() *advProg {
		lr := float32(0.1)
		return &advProg{
			fn:     func(x *frontend.Tensor) *frontend.Tensor { return x.Mul(frontend.Scalar(lr)).Add(frontend.Scalar(-lr)) },
			before: func(i int) { lr = float32(i) * 0.37 },
			args:   func(i int) []any { return []any{advSeq(i, 4)} },
		}
	}},
	{"float64-attribute-pad-full", 7, func() *advProg {
		v := 0.0
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				return x.Pad([]int{1}, []int{2}, v).Add(frontend.Full(frontend.Float32, v*2, 7))
			},
			before: func(i int) { v = []float64{0, 1.5, 1.5, -2, 0, 1.5, 3}[i] },
			args:   func(i int) []any { return []any{advSeq(i, 4)} },
		}
	}},
	{"string-attribute", 6, func() *advProg {
		mode := "tanh"
		return &advProg{
			fn:     func(x *frontend.Tensor) *frontend.Tensor { return x.Gelu(mode) },
			before: func(i int) { mode = []string{"tanh", "none", "none", "tanh", "none", "tanh"}[i] },
			args:   func(i int) []any { return []any{advSeq(i, 4)} },
		}
	}},
	{"captured-tensor-rebound-outside", 7, func() *advProg {
		w := fs(1, 2, 3)
		return &advProg{
			fn:     func(x *frontend.Tensor) *frontend.Tensor { return x.Mul(w).Sum(nil, false) },
			before: func(i int) { w = w.Sub(advSeq(i, 3).Mul(frontend.Scalar(0.1))) },
			args:   func(i int) []any { return []any{advSeq(i, 3)} },
			state:  func() []any { return []any{w} },
		}
	}},
	{"captured-tensor-rebound-to-fresh", 7, func() *advProg {
		w := fs(1, 2, 3)
		return &advProg{
			fn:     func(x *frontend.Tensor) *frontend.Tensor { return x.Mul(w) },
			before: func(i int) { w = fs(float32(i), -1, 2) },
			args:   func(i int) []any { return []any{advSeq(i, 3)} },
		}
	}},
	{"captured-tensor-rebound-inside-returned", 7, func() *advProg {
		w := fs(1, 2, 3)
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				w = w.Sub(x.Mul(frontend.Scalar(0.1)))
				return w
			},
			args:  func(i int) []any { return []any{advSeq(i, 3)} },
			state: func() []any { return []any{w} },
		}
	}},
	{"captured-tensor-swap-two", 8, func() *advProg {
		a, b := fs(1, 2, 3), fs(-1, 0, 1)
		return &advProg{
			fn:     func(x *frontend.Tensor) *frontend.Tensor { return x.Mul(a).Add(b) },
			before: func(i int) { a, b = b, a },
			args:   func(i int) []any { return []any{advSeq(i, 3)} },
		}
	}},
	{"captured-tensor-same-twice", 6, func() *advProg {
		a, b := fs(1, 2, 3), fs(-1, 0, 1)
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor { return x.Mul(a).Add(b) },
			before: func(i int) {
				if i%2 == 1 {
					b = a // the two captures alias
				} else {
					b = fs(float32(i), 1, 1)
				}
			},
			args: func(i int) []any { return []any{advSeq(i, 3)} },
		}
	}},
	{"argument-aliases-capture", 6, func() *advProg {
		w := fs(1, 2, 3)
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor { return x.Mul(w).Add(x) },
			args: func(i int) []any {
				if i%2 == 0 {
					return []any{w}
				}
				return []any{advSeq(i, 3)}
			},
		}
	}},
	{"same-argument-twice", 6, func() *advProg {
		return &advProg{
			fn: func(x, y *frontend.Tensor) *frontend.Tensor { return x.Mul(y).Sub(y) },
			args: func(i int) []any {
				a := advSeq(i, 3)
				if i%2 == 0 {
					return []any{a, a}
				}
				return []any{a, advSeq(i+1, 3)}
			},
		}
	}},
	{"method-pointer-receiver-fields", 8, func() *advProg {
		m := newAdvModel()
		return &advProg{
			fn: m.Forward,
			before: func(i int) {
				switch i % 4 {
				case 1:
					m.In.W = m.In.W.Mul(frontend.Scalar(0.9))
					m.Train = true
				case 2:
					m.In.K = 3
					m.Layers = append(m.Layers, fs(0, float32(i), 0))
				case 3:
					m.Named["a"] = fs(1, 2, 3)
					m.Train = false
				case 0:
					delete(m.Named, "b")
					m.Layers = m.Layers[:1]
					m.In.K = 0
				}
			},
			args: func(i int) []any { return []any{advSeq(i, 3)} },
		}
	}},
	{"method-value-receiver-bound-copy", 6, func() *advProg {
		m := newAdvModel()
		f := m.ValueForward // binds a copy of *m now
		return &advProg{
			fn:     f,
			before: func(i int) { m.In.W = fs(9, 9, 9) }, // not seen, eagerly either
			args:   func(i int) []any { return []any{advSeq(i, 3)} },
		}
	}},
	{"pytree-model-argument", 8, func() *advProg {
		m := newAdvModel()
		return &advProg{
			fn: func(m *advModel, x *frontend.Tensor, k int, train bool) (*frontend.Tensor, error) {
				m.In.K, m.Train = k, train
				out := m.Forward(x)
				if err := m.Steps.AddInPlace(frontend.Scalar(1)); err != nil {
					return nil, err
				}
				return out, nil
			},
			before: func(i int) {
				if i == 3 {
					m.Named["c"] = fs(3, 3, 3)
				}
				if i == 5 {
					m.Layers = nil
				}
			},
			args:  func(i int) []any { return []any{m, advSeq(i, 3), i % 3, i%2 == 0} },
			state: func() []any { return []any{m} },
		}
	}},
	{"pytree-map-and-slice-results", 6, func() *advProg {
		return &advProg{
			fn: func(ts map[string]*frontend.Tensor, xs []*frontend.Tensor) (map[string]*frontend.Tensor, []*frontend.Tensor) {
				out := map[string]*frontend.Tensor{}
				for k, v := range ts {
					out[k] = v.Mul(v)
				}
				var rs []*frontend.Tensor
				for _, x := range xs {
					rs = append(rs, x.Neg())
				}
				return out, rs
			},
			args: func(i int) []any {
				m := map[string]*frontend.Tensor{"z": advSeq(i, 2), "a": advSeq(i+1, 2)}
				if i%2 == 1 {
					m["m"] = advSeq(i+2, 2)
				}
				xs := make([]*frontend.Tensor, i%3)
				for j := range xs {
					xs[j] = advSeq(i+j, 2)
				}
				return []any{m, xs}
			},
		}
	}},
	{"globals", 7, func() *advProg {
		advGlobalScale, advGlobalW, advGlobalMode = 1, fs(1, 1, 1), "relu"
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				h := x.Mul(advGlobalW).Mul(frontend.Scalar(advGlobalScale))
				if advGlobalMode == "relu" {
					return h.Relu()
				}
				return h.Sigmoid()
			},
			before: func(i int) {
				advGlobalScale = float32(i) - 2
				advGlobalW = advSeq(i+10, 3)
				advGlobalMode = []string{"relu", "sigmoid"}[i%2]
			},
			args: func(i int) []any { return []any{advSeq(i, 3)} },
		}
	}},
	{"closure-over-loop-variable", 6, func() *advProg {
		var fns []func(*frontend.Tensor) *frontend.Tensor
		for k := range 3 {
			fns = append(fns, func(x *frontend.Tensor) *frontend.Tensor { return x.Mul(frontend.Scalar(float32(k + 1))) })
		}
		sel := 0
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				return fns[sel](x).Add(fns[(sel+1)%3](x))
			},
			before: func(i int) { sel = i % 3 },
			args:   func(i int) []any { return []any{advSeq(i, 3)} },
		}
	}},
	{"host-read-argument-item", 8, func() *advProg {
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				if x.Sum(nil, false).Item() > 0 {
					return x.Exp()
				}
				return x.Neg()
			},
			args:   func(i int) []any { return []any{advSeq(i, 3)} },
			breaks: true,
		}
	}},
	{"host-read-argument-before-ops", 8, func() *advProg {
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				if x.Float32s()[0] > 0 {
					return x.Exp()
				}
				return x.Neg()
			},
			args:   func(i int) []any { return []any{advSeq(i, 3)} },
			breaks: true,
		}
	}},
	{"host-read-intermediate", 8, func() *advProg {
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				h := x.Mul(x).Sub(frontend.Scalar(1))
				n := 0
				for h.ReduceMax(nil, false).Item() > 0.1 && n < 5 {
					h = h.Mul(frontend.Scalar(0.5))
					n++
				}
				return h.Add(frontend.Scalar(float32(n)))
			},
			args:   func(i int) []any { return []any{advSeq(i, 3)} },
			breaks: true,
		}
	}},
	{"host-read-captured-tensor", 8, func() *advProg {
		w := fs(1, -1)
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				if w.Float32s()[0] > 0 {
					return x.Mul(w)
				}
				return x.Sub(w)
			},
			before: func(i int) { _ = w.AddInPlace(fs(-0.7, 0.3)) },
			args:   func(i int) []any { return []any{advSeq(i, 2)} },
			state:  func() []any { return []any{w} },
			breaks: true,
		}
	}},
	{"host-read-captured-after-use", 8, func() *advProg {
		w := fs(1, -1)
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				h := x.Mul(w)
				if w.Float32s()[0] > 0 {
					return h.Exp()
				}
				return h
			},
			before: func(i int) { w = fs(float32(i%3)-1, 2) },
			args:   func(i int) []any { return []any{advSeq(i, 2)} },
			breaks: true,
		}
	}},
	{"host-read-len-and-shape-loops", 8, func() *advProg {
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				h := x
				for range len(x.Float32s()) {
					h = h.Tanh()
				}
				for range x.Shape()[0] {
					h = h.Add(frontend.Scalar(1))
				}
				return h
			},
			args:   func(i int) []any { return []any{advSeq(i, 1+i%4)} },
			breaks: true,
		}
	}},
	{"shape-driven-loop-dynamic", 8, func() *advProg {
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				h := x
				for j := 0; j < x.Shape()[0]; j++ {
					h = h.Mul(frontend.Scalar(1.1))
				}
				return h.Sum(nil, false)
			},
			args: func(i int) []any { return []any{advSeq(i, []int{2, 3, 4, 3, 5, 2, 1, 6}[i])} },
		}
	}},
	{"fromslice-of-mutated-go-slice", 8, func() *advProg {
		data := []float32{1, 2, 3}
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				return x.Mul(frontend.FromSlice(data))
			},
			before: func(i int) {
				data[i%3] += float32(i) // mutated in place, same length
			},
			args: func(i int) []any { return []any{advSeq(i, 3)} },
		}
	}},
	{"fromslice-of-growing-go-slice", 7, func() *advProg {
		data := []float32{1}
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				return frontend.FromSlice(data).Sum(nil, false).Mul(x)
			},
			before: func(i int) { data = append(data, float32(i)) },
			args:   func(i int) []any { return []any{advSeq(i, 3)} },
		}
	}},
	{"gather-from-go-indices", 7, func() *advProg {
		idx := []int64{0, 2}
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				return x.Gather(frontend.FromSlice(idx), 0)
			},
			before: func(i int) { idx[i%2] = int64(i % 4) },
			args:   func(i int) []any { return []any{advSeq(i, 4)} },
		}
	}},
	{"assign-argument", 7, func() *advProg {
		x := fs(1, 2, 3)
		return &advProg{
			fn: func(x, g *frontend.Tensor) (*frontend.Tensor, error) {
				if err := x.SubInPlace(g.Mul(frontend.Scalar(0.5))); err != nil {
					return nil, err
				}
				return x.Sum(nil, false), nil
			},
			args:  func(i int) []any { return []any{x, advSeq(i, 3)} },
			state: func() []any { return []any{x} },
		}
	}},
	{"assign-captured-and-read-after", 7, func() *advProg {
		s := fs(0, 0)
		return &advProg{
			fn: func(x *frontend.Tensor) (*frontend.Tensor, error) {
				before := s.Mul(frontend.Scalar(1))
				if err := s.AddInPlace(x); err != nil {
					return nil, err
				}
				after := s.Mul(frontend.Scalar(2))
				if err := s.MulInPlace(frontend.Scalar(0.5)); err != nil {
					return nil, err
				}
				return before.Add(after).Add(s), nil
			},
			args:  func(i int) []any { return []any{advSeq(i, 2)} },
			state: func() []any { return []any{s} },
		}
	}},
	{"assign-in-branch", 8, func() *advProg {
		s := fs(1, 1)
		on := false
		return &advProg{
			fn: func(x *frontend.Tensor) (*frontend.Tensor, error) {
				if on {
					if err := s.Assign(x.Add(s)); err != nil {
						return nil, err
					}
				}
				return s.Mul(x), nil
			},
			before: func(i int) { on = i%3 != 0 },
			args:   func(i int) []any { return []any{advSeq(i, 2)} },
			state:  func() []any { return []any{s} },
		}
	}},
	{"assign-struct-field-and-alias", 7, func() *advProg {
		m := newAdvModel()
		alias := m.Bias
		return &advProg{
			fn: func(x *frontend.Tensor) (*frontend.Tensor, error) {
				if err := m.Bias.AddInPlace(x); err != nil {
					return nil, err
				}
				return alias.Mul(frontend.Scalar(2)), nil // the same tensor, updated
			},
			args:  func(i int) []any { return []any{advSeq(i, 3)} },
			state: func() []any { return []any{m.Bias, alias} },
		}
	}},
	{"assign-argument-aliased-twice", 7, func() *advProg {
		x := fs(1, 2, 3)
		return &advProg{
			fn: func(a, b *frontend.Tensor) (*frontend.Tensor, error) {
				if err := a.AddInPlace(frontend.Scalar(1)); err != nil {
					return nil, err
				}
				return b.Mul(frontend.Scalar(3)), nil // b is a: sees the update
			},
			args: func(i int) []any {
				if i%2 == 0 {
					return []any{x, x}
				}
				return []any{x, fs(1, 1, 1)}
			},
			state: func() []any { return []any{x} },
		}
	}},
	{"assign-returned-target", 6, func() *advProg {
		s := fs(1, 2)
		return &advProg{
			fn: func(x *frontend.Tensor) (*frontend.Tensor, *frontend.Tensor, error) {
				if err := s.Assign(x.Mul(s)); err != nil {
					return nil, nil, err
				}
				return s, x, nil
			},
			args:  func(i int) []any { return []any{advSeq(i, 2)} },
			state: func() []any { return []any{s} },
		}
	}},
	{"assign-target-replaced-between-calls", 7, func() *advProg {
		s := fs(1, 2)
		return &advProg{
			fn: func(x *frontend.Tensor) (*frontend.Tensor, error) {
				return x, s.AddInPlace(x)
			},
			before: func(i int) {
				if i%2 == 0 {
					s = fs(float32(i), 0)
				}
			},
			args:  func(i int) []any { return []any{advSeq(i, 2)} },
			state: func() []any { return []any{s} },
		}
	}},
	{"assign-then-host-read", 7, func() *advProg {
		s := fs(1, -2)
		return &advProg{
			fn: func(x *frontend.Tensor) (*frontend.Tensor, error) {
				if err := s.AddInPlace(x); err != nil {
					return nil, err
				}
				if s.Sum(nil, false).Item() > 0 {
					return s.Neg(), nil
				}
				return s.Exp(), nil
			},
			args:   func(i int) []any { return []any{advSeq(i, 2)} },
			state:  func() []any { return []any{s} },
			breaks: true,
		}
	}},
	{"assign-shape-error-third-call", 6, func() *advProg {
		s := fs(1, 2)
		return &advProg{
			fn: func(x *frontend.Tensor) (*frontend.Tensor, error) {
				if err := s.Assign(x); err != nil {
					return nil, err
				}
				return s.Add(frontend.Scalar(1)), nil
			},
			args: func(i int) []any {
				if i == 2 {
					return []any{advSeq(i, 3)}
				}
				return []any{advSeq(i, 2)}
			},
			state: func() []any { return []any{s} },
		}
	}},
	{"optimizer-step", 8, func() *advProg {
		w, b := fs(0.5, -0.5), fs(0)
		mom := fs(0, 0)
		lr := float32(0.1)
		return &advProg{
			fn: func(x, y *frontend.Tensor) (*frontend.Tensor, error) {
				pred := x.MatMul(w.Reshape(2, 1)).Reshape(4).Add(b)
				diff := pred.Sub(y)
				loss := diff.Mul(diff).Mean(nil, false)
				g := x.Transpose(1, 0).MatMul(diff.Reshape(4, 1)).Reshape(2)
				if err := mom.Assign(mom.Mul(frontend.Scalar(0.9)).Add(g)); err != nil {
					return nil, err
				}
				if err := w.SubInPlace(mom.Mul(frontend.Scalar(lr))); err != nil {
					return nil, err
				}
				return loss, b.SubInPlace(diff.Mean(nil, false).Mul(frontend.Scalar(lr)))
			},
			before: func(i int) { lr = 0.1 / float32(i+1) },
			args: func(i int) []any {
				x := frontend.FromSlice([]float32{1, 2, 3, 4, 5, 6, 7, float32(i)}, 4, 2)
				return []any{x, advSeq(i, 4)}
			},
			state: func() []any { return []any{w, b, mom} },
		}
	}},
	{"dropout-and-seed", 8, func() *advProg {
		train := true
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				h := frontend.Dropout(x, 0.5, train)
				return h.Add(frontend.RandLike(x))
			},
			before: func(i int) {
				train = i%3 != 2
				if i == 4 {
					frontend.Seed(99)
				}
			},
			args: func(i int) []any { return []any{advSeq(i, 16)} },
		}
	}},
	{"seed-inside-fn", 6, func() *advProg {
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				frontend.Seed(5)
				return x.Mul(frontend.RandUniform(frontend.Float32, 8))
			},
			args: func(i int) []any { return []any{advSeq(i, 8)} },
		}
	}},
	{"rand-shape-from-go", 6, func() *advProg {
		n := 2
		return &advProg{
			fn: func() *frontend.Tensor {
				return frontend.RandUniform(frontend.Float32, n).Add(frontend.Bernoulli(0.3, n))
			},
			before: func(i int) { n = 2 + i%3 },
			args:   func(i int) []any { return nil },
		}
	}},
	{"symbolic-reshape-shapes-change", 8, func() *advProg {
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				b, n := x.Size(0), x.Size(1)
				return x.ReshapeS(b.Mul(n)).Tanh().ReshapeS(b, n).Sum([]int{1}, false)
			},
			args: func(i int) []any {
				rows := []int{2, 3, 4, 2, 1, 5, 3, 2}[i]
				xs := make([]float32, rows*4)
				for j := range xs {
					xs[j] = float32(j%5) - float32(i)
				}
				return []any{frontend.FromSlice(xs, rows, 4)}
			},
		}
	}},
	{"flatten-heads", 7, func() *advProg {
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				b, t, c := x.Size(0), x.Size(1), x.Size(2)
				h := x.ReshapeS(b, t, frontend.Sz(2), c.DivInt(2)).Transpose(0, 2, 1, 3)
				return h.Transpose(0, 2, 1, 3).Flatten(2, 3).Mul(frontend.Scalar(2))
			},
			args: func(i int) []any {
				t := []int{3, 5, 2, 4, 4, 1, 6}[i]
				xs := make([]float32, t*4)
				for j := range xs {
					xs[j] = float32(j) * 0.1
				}
				return []any{frontend.FromSlice(xs, 1, t, 4)}
			},
		}
	}},
	{"recompile-limit", 9, func() *advProg {
		v := 0.0
		return &advProg{
			fn:     func(x *frontend.Tensor) *frontend.Tensor { return x.Pad([]int{0}, []int{1}, v).Exp() },
			before: func(i int) { v = []float64{0, 1, 2, 3, 0, 4, 1, 5, 2}[i] },
			args:   func(i int) []any { return []any{advSeq(i, 3)} },
			opts:   func(o *frontend.Options) { o.RecompileLimit = 2 },
		}
	}},
	{"panic-third-call", 7, func() *advProg {
		n := 0
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				n++
				h := x.Tanh()
				if n == 3 {
					panic("boom")
				}
				return h.Add(frontend.Scalar(float32(n)))
			},
			args:  func(i int) []any { return []any{advSeq(i, 3)} },
			state: func() []any { return []any{n} },
		}
	}},
	{"error-third-call", 7, func() *advProg {
		n := 0
		return &advProg{
			fn: func(x *frontend.Tensor) (*frontend.Tensor, error) {
				n++
				h := x.Tanh()
				if n == 3 {
					return nil, errors.New("third")
				}
				return h.Mul(frontend.Scalar(float32(n))), nil
			},
			args:  func(i int) []any { return []any{advSeq(i, 3)} },
			state: func() []any { return []any{n} },
		}
	}},
	{"shape-error-third-call", 6, func() *advProg {
		w := fs(1, 2, 3)
		return &advProg{
			fn:     func(x *frontend.Tensor) *frontend.Tensor { return x.Mul(w) },
			before: func(i int) { w = advSeq(i, map[bool]int{true: 4, false: 3}[i == 2]) },
			args:   func(i int) []any { return []any{advSeq(i, 3)} },
		}
	}},
	{"feed-result-back", 8, func() *advProg {
		var prev, prev2 *frontend.Tensor
		return &advProg{
			fn: func(x, y *frontend.Tensor) (*frontend.Tensor, *frontend.Tensor) {
				return x.Mul(frontend.Scalar(0.9)).Add(y), y.Tanh()
			},
			args: func(i int) []any {
				if prev == nil {
					prev, prev2 = advSeq(0, 3), advSeq(1, 3)
				}
				return []any{prev, prev2}
			},
			after: func(res []any) { prev, prev2 = res[0].(*frontend.Tensor), res[1].(*frontend.Tensor) },
		}
	}},
	{"feed-result-back-with-inplace", 7, func() *advProg {
		var prev *frontend.Tensor
		s := fs(0, 0, 0)
		return &advProg{
			fn: func(x *frontend.Tensor) (*frontend.Tensor, error) {
				if err := x.AddInPlace(s); err != nil { // the previous result, updated
					return nil, err
				}
				if err := s.Assign(x.Mul(frontend.Scalar(0.5))); err != nil {
					return nil, err
				}
				return x.Add(frontend.Scalar(1)), nil
			},
			args: func(i int) []any {
				if prev == nil {
					prev = advSeq(0, 3)
				}
				return []any{prev}
			},
			after: func(res []any) { prev = res[0].(*frontend.Tensor) },
			state: func() []any { return []any{s, prev} },
		}
	}},
	{"escape-after-break-and-shapes-change", 7, func() *advProg {
		var kept *frontend.Tensor
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				h := x.Exp()
				if h.Sum(nil, false).Item() > 3 {
					h = h.Neg()
				}
				out := h.Sum(nil, false)
				if kept != nil {
					out = out.Add(kept.Sum(nil, false))
				}
				kept = h.Mul(frontend.Scalar(2)) // after the break: graph 2
				return out
			},
			args:   func(i int) []any { return []any{advSeq(i, 2+i%3)} },
			breaks: true,
		}
	}},
	{"escape-shapes-change-replayed", 8, func() *advProg {
		var kept *frontend.Tensor
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				out := x.Tanh().Sum(nil, false)
				if kept != nil {
					out = out.Add(kept)
				}
				kept = x.Mul(x).Sum(nil, false)
				return out
			},
			args: func(i int) []any { return []any{advSeq(i, []int{2, 3, 4, 3, 5, 2, 2, 6}[i])} },
		}
	}},
	{"assign-to-escaped-inside", 7, func() *advProg {
		var kept *frontend.Tensor
		return &advProg{
			fn: func(x *frontend.Tensor) (*frontend.Tensor, error) {
				if kept != nil {
					if err := kept.AddInPlace(x); err != nil {
						return nil, err
					}
				}
				out := x.Neg()
				if kept != nil {
					out = out.Add(kept)
				}
				kept = x.Exp()
				return out, nil
			},
			args: func(i int) []any { return []any{advSeq(i, 2)} },
		}
	}},
	{"return-input-and-capture-unchanged", 6, func() *advProg {
		w := fs(4, 5)
		return &advProg{
			fn: func(x *frontend.Tensor) (*frontend.Tensor, *frontend.Tensor, *frontend.Tensor, *frontend.Tensor) {
				return x, w, x.Add(w), fs(7, 8)
			},
			before: func(i int) { w = advSeq(i+3, 2) },
			args:   func(i int) []any { return []any{advSeq(i, 2)} },
		}
	}},
	{"same-result-twice", 6, func() *advProg {
		return &advProg{
			fn: func(x *frontend.Tensor) []*frontend.Tensor {
				y := x.Exp()
				return []*frontend.Tensor{y, y, x}
			},
			args: func(i int) []any { return []any{advSeq(i, 2)} },
		}
	}},
	{"kv-cache-concat-grows", 6, func() *advProg {
		cache := fs(0)
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				cache = frontend.Concat(0, cache, x)
				return cache.Sum(nil, false)
			},
			args:  func(i int) []any { return []any{advSeq(i, 1)} },
			state: func() []any { return []any{cache} },
		}
	}},
	{"kv-cache-assign-slot", 7, func() *advProg {
		cache := frontend.Zeros(frontend.Float32, 4)
		return &advProg{
			fn: func(x *frontend.Tensor, pos int) (*frontend.Tensor, error) {
				mask := make([]float32, 4)
				mask[pos%4] = 1
				m := frontend.FromSlice(mask)
				if err := cache.Assign(cache.Mul(frontend.Scalar(1).Sub(m)).Add(m.Mul(x))); err != nil {
					return nil, err
				}
				return cache.Softmax(0), nil
			},
			args:  func(i int) []any { return []any{advSeq(i, 1).Reshape(), i} },
			state: func() []any { return []any{cache} },
		}
	}},
	{"int-and-bool-arguments", 8, func() *advProg {
		return &advProg{
			fn: func(x *frontend.Tensor, k int, neg bool, s float32) *frontend.Tensor {
				for range k {
					x = x.Add(frontend.Scalar(s))
				}
				if neg {
					x = x.Neg()
				}
				return x
			},
			args: func(i int) []any { return []any{advSeq(i, 2), i % 3, i%2 == 0, float32(i) / 3} },
		}
	}},
	{"where-cmp-captured-threshold", 7, func() *advProg {
		th := float32(0)
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				return frontend.Where(x.Cmp("gt", frontend.Scalar(th)), x, x.Mul(frontend.Scalar(-th)))
			},
			before: func(i int) { th = float32(i%3) - 1 },
			args:   func(i int) []any { return []any{advSeq(i, 5)} },
		}
	}},
	{"int-dtypes-argmax-cast", 6, func() *advProg {
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				return x.Argmax(0, false).Cast(frontend.Float32).Add(x.Cast(frontend.Int64).Cast(frontend.Float32).Sum(nil, false))
			},
			args: func(i int) []any { return []any{advSeq(i, 5).Mul(frontend.Scalar(3))} },
		}
	}},
	{"nested-compiled", 7, func() *advProg {
		k := float32(1)
		inner := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor { return x.Mul(frontend.Scalar(k)).Tanh() }, frontend.Options{})
		return &advProg{
			fn: func(x *frontend.Tensor) (*frontend.Tensor, error) {
				r, err := inner.Call(x.Add(frontend.Scalar(1)))
				if err != nil {
					return nil, err
				}
				return r[0].Mul(x), nil
			},
			before: func(i int) { k = float32(i) - 3 },
			args:   func(i int) []any { return []any{advSeq(i, 3)} },
			breaks: true,
		}
	}},
	{"memoized-tensor-in-closure", 6, func() *advProg {
		var cache *frontend.Tensor
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				if cache == nil {
					cache = x.Mul(frontend.Scalar(2))
					return cache
				}
				return x.Add(cache)
			},
			args: func(i int) []any { return []any{advSeq(i, 2)} },
		}
	}},
	{"escaping-intermediate-in-closure", 6, func() *advProg {
		var last *frontend.Tensor
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				out := x.Add(frontend.Scalar(1))
				if last != nil {
					out = out.Add(last)
				}
				last = x.Mul(frontend.Scalar(0.5)) // not returned
				return out
			},
			args: func(i int) []any { return []any{advSeq(i, 2)} },
		}
	}},
	{"interface-argument", 6, func() *advProg {
		return &advProg{
			fn: func(v any, x *frontend.Tensor) *frontend.Tensor {
				switch w := v.(type) {
				case *frontend.Tensor:
					return x.Mul(w)
				case []*frontend.Tensor:
					return x.Add(w[0])
				}
				return x
			},
			args: func(i int) []any {
				switch i % 3 {
				case 0:
					return []any{advSeq(i+5, 2), advSeq(i, 2)}
				case 1:
					return []any{[]*frontend.Tensor{advSeq(i+5, 2)}, advSeq(i, 2)}
				}
				return []any{nil, advSeq(i, 2)}
			},
		}
	}},
	{"map-key-insertion-order", 6, func() *advProg {
		m := map[string]*frontend.Tensor{}
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				h := x
				for _, k := range sortedKeys(m) {
					h = h.Mul(m[k]).Add(frontend.Scalar(float32(len(k))))
				}
				return h
			},
			before: func(i int) {
				clear(m)
				keys := []string{"a", "bb", "ccc"}
				for j := range keys {
					k := keys[(j+i)%3]
					if (i+j)%4 != 3 {
						m[k] = advSeq(i+j, 2)
					}
				}
			},
			args: func(i int) []any { return []any{advSeq(i, 2)} },
		}
	}},
	{"escaped-used-as-argument-and-assign-value", 7, func() *advProg {
		var kept *frontend.Tensor
		s := fs(0, 0)
		return &advProg{
			fn: func(x, prev *frontend.Tensor) (*frontend.Tensor, error) {
				if prev != nil {
					if err := s.Assign(prev); err != nil {
						return nil, err
					}
				}
				kept = x.Mul(frontend.Scalar(2)).Add(s)
				return s.Add(x), nil
			},
			args: func(i int) []any {
				if kept == nil {
					return []any{advSeq(i, 2), nil}
				}
				return []any{advSeq(i, 2), kept}
			},
			state: func() []any { return []any{s} },
		}
	}},
	{"escaped-then-assigned-outside", 6, func() *advProg {
		var kept *frontend.Tensor
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				out := x.Neg()
				if kept != nil {
					out = out.Add(kept)
				}
				kept = x.Exp()
				return out
			},
			before: func(i int) {
				if kept != nil && i%2 == 0 {
					_ = kept.AddInPlace(frontend.Scalar(1))
				}
			},
			args: func(i int) []any { return []any{advSeq(i, 2)} },
		}
	}},
	{"shared-value-not-clobbered-by-inplace", 6, func() *advProg {
		b := fs(1, 2, 3)
		a := frontend.Zeros(frontend.Float32, 3)
		_ = a.Assign(b) // a shares b's value
		return &advProg{
			fn: func(x *frontend.Tensor) (*frontend.Tensor, error) {
				return a.Mul(x), a.AddInPlace(x)
			},
			args:  func(i int) []any { return []any{advSeq(i, 3)} },
			state: func() []any { return []any{a, b} },
		}
	}},
	{"argument-shares-value-with-state", 6, func() *advProg {
		s := fs(1, 2, 3)
		return &advProg{
			fn: func(x *frontend.Tensor) (*frontend.Tensor, error) {
				return x.Add(s), s.AddInPlace(x)
			},
			args: func(i int) []any {
				x := frontend.Zeros(frontend.Float32, 3)
				_ = x.Assign(s) // the argument's value is s's
				return []any{x}
			},
			state: func() []any { return []any{s} },
		}
	}},
	{"optimizer-over-param-slice-growing", 7, func() *advProg {
		params := []*frontend.Tensor{fs(1, 2)}
		return &advProg{
			fn: func(ps []*frontend.Tensor, x *frontend.Tensor) (*frontend.Tensor, error) {
				loss := frontend.Scalar(0)
				for _, p := range ps {
					loss = loss.Add(p.Mul(x).Sum(nil, false))
					if err := p.SubInPlace(x.Mul(frontend.Scalar(0.1))); err != nil {
						return nil, err
					}
				}
				return loss, nil
			},
			before: func(i int) {
				if i == 2 || i == 4 {
					params = append(params, fs(float32(i), 1))
				}
			},
			args:  func(i int) []any { return []any{params, advSeq(i, 2)} },
			state: func() []any { return []any{params} },
		}
	}},
	{"map-state-assign", 6, func() *advProg {
		st := map[string]*frontend.Tensor{"m": fs(0, 0), "v": fs(1, 1)}
		return &advProg{
			fn: func(st map[string]*frontend.Tensor, g *frontend.Tensor) (*frontend.Tensor, error) {
				if err := st["m"].Assign(st["m"].Mul(frontend.Scalar(0.9)).Add(g)); err != nil {
					return nil, err
				}
				if err := st["v"].Assign(st["v"].Mul(frontend.Scalar(0.99)).Add(g.Mul(g))); err != nil {
					return nil, err
				}
				return st["m"].Div(st["v"].Sqrt()), nil
			},
			args:  func(i int) []any { return []any{st, advSeq(i, 2)} },
			state: func() []any { return []any{st} },
		}
	}},
	{"two-compiled-share-state", 7, func() *advProg {
		s := fs(1, 1)
		upd := frontend.MustCompile(func(x *frontend.Tensor) error { return s.AddInPlace(x) }, frontend.Options{})
		return &advProg{
			fn: func(x *frontend.Tensor) (*frontend.Tensor, error) {
				return s.Mul(x), nil
			},
			before: func(i int) {
				if _, err := upd.Invoke(advSeq(i+3, 2)); err != nil {
					panic(err)
				}
			},
			args:  func(i int) []any { return []any{advSeq(i, 2)} },
			state: func() []any { return []any{s} },
		}
	}},
	{"zero-and-one-sized", 7, func() *advProg {
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				return x.Exp().Sum(nil, false).Add(frontend.Scalar(float32(x.Dim(0))))
			},
			args: func(i int) []any { return []any{advSeq(i, []int{0, 1, 3, 0, 2, 1, 4}[i])} },
		}
	}},
	{"bool-and-int-tensors", 6, func() *advProg {
		mask := []bool{true, false, true}
		return &advProg{
			fn: func(x *frontend.Tensor, idx *frontend.Tensor) *frontend.Tensor {
				m := frontend.FromSlice(mask)
				return frontend.Where(m, x, x.Neg()).Gather(idx, 0)
			},
			before: func(i int) { mask[i%3] = !mask[i%3] },
			args: func(i int) []any {
				return []any{advSeq(i, 3), frontend.FromSlice([]int32{int32(i % 3), 0})}
			},
		}
	}},
	{"pow-softmax-layernorm-captured", 6, func() *advProg {
		gamma, beta := fs(1, 1, 1, 1), fs(0, 0, 0, 0)
		eps := 1e-5
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				h := x.LayerNorm(gamma, beta, -1, eps)
				return h.Softmax(0).Pow(frontend.Scalar(2)).Add(h.RMSNorm(gamma, -1, eps))
			},
			before: func(i int) {
				gamma = gamma.Mul(frontend.Scalar(1.1))
				beta = beta.Add(frontend.Scalar(0.1))
				eps = []float64{1e-5, 1e-3}[i%2]
			},
			args: func(i int) []any { return []any{frontend.FromSlice([]float32{1, 2, 3, float32(i), -1, 0, 2, 1}, 2, 4)} },
		}
	}},
	{"disable-enable-reset-between-calls", 8, func() *advProg {
		k := 1
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				for range k {
					x = x.Tanh()
				}
				return x
			},
			before: func(i int) { k = 1 + i%2 },
			args:   func(i int) []any { return []any{advSeq(i, 2)} },
			ctl: func(c *frontend.Compiled, i int) {
				switch i % 4 {
				case 1:
					c.Disable()
				case 2:
					c.Enable()
				case 3:
					c.Reset()
				}
			},
		}
	}},
	{"random-in-branch-and-host-read", 7, func() *advProg {
		flag := true
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				if flag {
					x = x.Add(frontend.RandLike(x))
				}
				r := frontend.RandUniform(frontend.Float32)
				if r.Item() > 0.5 {
					return x.Neg()
				}
				return x
			},
			before: func(i int) { flag = i%2 == 0 },
			args:   func(i int) []any { return []any{advSeq(i, 3)} },
		}
	}},
	{"rand-state-restored-by-user", 6, func() *advProg {
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				s, o := frontend.RandState()
				a := frontend.Dropout(x, 0.5, true)
				frontend.SetRandState(s, o)
				b := frontend.Dropout(x, 0.5, true)
				return a.Sub(b) // zero
			},
			args: func(i int) []any { return []any{advSeq(i, 8)} },
		}
	}},
	{"pending-eager-argument", 6, func() *advProg {
		w := fs(1, 2)
		return &advProg{
			fn:   func(x *frontend.Tensor) *frontend.Tensor { return x.Mul(w) },
			args: func(i int) []any { return []any{advSeq(i, 2).Add(w).Tanh()} }, // pending outside
		}
	}},
	{"return-only-go-made-tensor", 6, func() *advProg {
		v := float32(0)
		return &advProg{
			fn:     func(x *frontend.Tensor) *frontend.Tensor { return fs(v, v+1) },
			before: func(i int) { v = float32(i) },
			args:   func(i int) []any { return []any{advSeq(i, 2)} },
		}
	}},
	{"assign-from-argument-directly", 6, func() *advProg {
		s := fs(0, 0)
		return &advProg{
			fn: func(x *frontend.Tensor) (*frontend.Tensor, error) {
				old := s.Mul(frontend.Scalar(1))
				if err := s.Assign(x); err != nil {
					return nil, err
				}
				return old, nil
			},
			args:  func(i int) []any { return []any{advSeq(i, 2)} },
			state: func() []any { return []any{s} },
		}
	}},
	{"assign-twice-and-self", 6, func() *advProg {
		s := fs(1, 2)
		return &advProg{
			fn: func(x *frontend.Tensor) (*frontend.Tensor, error) {
				if err := s.Assign(s); err != nil {
					return nil, err
				}
				if err := s.AddInPlace(x); err != nil {
					return nil, err
				}
				if err := s.MulInPlace(s); err != nil {
					return nil, err
				}
				return x, nil
			},
			args:  func(i int) []any { return []any{advSeq(i, 2).Mul(frontend.Scalar(0.1))} },
			state: func() []any { return []any{s} },
		}
	}},
	{"assign-argument-returned-and-state-alias", 6, func() *advProg {
		s := fs(1, 2)
		return &advProg{
			fn: func(x *frontend.Tensor) (*frontend.Tensor, *frontend.Tensor, error) {
				if err := x.AddInPlace(frontend.Scalar(1)); err != nil {
					return nil, nil, err
				}
				return x, x.Mul(x), nil
			},
			args: func(i int) []any {
				if i%2 == 0 {
					return []any{s}
				}
				return []any{advSeq(i, 2)}
			},
			state: func() []any { return []any{s} },
		}
	}},
	{"nested-inner-updates-outer-input", 7, func() *advProg {
		st := fs(1, 1)
		inner := frontend.MustCompile(func(x *frontend.Tensor) error { return st.AddInPlace(x) }, frontend.Options{})
		return &advProg{
			fn: func(y *frontend.Tensor) (*frontend.Tensor, error) {
				h := y.Mul(st)
				if _, err := inner.Invoke(fs(1, 2)); err != nil {
					return nil, err
				}
				return h.Add(st), nil
			},
			args:  func(i int) []any { return []any{advSeq(i, 2)} },
			state: func() []any { return []any{st} },
		}
	}},
	{"pointer-to-captured-tensor-swapped", 6, func() *advProg {
		a, b := fs(1, 2), fs(3, 4)
		p := &a
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor { return x.Mul(*p) },
			before: func(i int) {
				p = map[bool]**frontend.Tensor{true: &a, false: &b}[i%2 == 0]
				*p = (*p).Add(frontend.Scalar(1))
			},
			args: func(i int) []any { return []any{advSeq(i, 2)} },
		}
	}},
	{"captured-func-value", 6, func() *advProg {
		act := (*frontend.Tensor).Relu
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor { return act(x.Sub(frontend.Scalar(0.1))) },
			before: func(i int) {
				act = []func(*frontend.Tensor) *frontend.Tensor{(*frontend.Tensor).Relu, (*frontend.Tensor).Tanh, (*frontend.Tensor).Sigmoid}[i%3]
			},
			args: func(i int) []any { return []any{advSeq(i, 3)} },
		}
	}},
	{"attributes-from-mutated-go-slices", 8, func() *advProg {
		perm := []int{0, 1}
		axes := []int{0}
		shape := []int{2, 3}
		pred := "gt"
		dt := frontend.Float32
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				h := x.Reshape(shape...).Transpose(perm...)
				m := h.Cmp(pred, frontend.Scalar(0)).Cast(dt).Cast(frontend.Float32)
				return h.Mul(m).Sum(axes, false)
			},
			before: func(i int) {
				perm[0], perm[1] = perm[1], perm[0]
				axes[0] = i % 2
				shape[0], shape[1] = shape[1], shape[0]
				pred = []string{"gt", "lt", "ge"}[i%3]
				dt = []frontend.DType{frontend.Float32, frontend.Int64, frontend.Float64}[i%3]
			},
			args: func(i int) []any { return []any{advSeq(i, 6)} },
		}
	}},
	{"slice-concat-from-go-ints", 7, func() *advProg {
		start, axis := 0, 0
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				s := x.Slice([]int{start, 0}, []int{start + 1, 2}, []int{1, 1})
				return frontend.Concat(axis, s, s.Neg())
			},
			before: func(i int) { start, axis = i%3, i%2 },
			args: func(i int) []any {
				return []any{frontend.FromSlice([]float32{1, 2, 3, 4, 5, float32(i)}, 3, 2)}
			},
		}
	}},
	{"size-int-loop-markdynamic", 7, func() *advProg {
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				h := x.Sum(nil, false)
				for range x.Size(0).Int() {
					h = h.Mul(frontend.Scalar(0.5))
				}
				return h
			},
			args: func(i int) []any { return []any{frontend.MarkDynamic(advSeq(i, []int{2, 3, 4, 2, 5, 3, 6}[i]), 0)} },
		}
	}},
	{"struct-result-and-array-arg", 6, func() *advProg {
		type out struct {
			A *frontend.Tensor
			B []*frontend.Tensor
			N int
		}
		return &advProg{
			fn: func(arr [2]*frontend.Tensor, pp **frontend.Tensor) out {
				return out{A: arr[0].Add(arr[1]), B: []*frontend.Tensor{(*pp).Neg(), arr[1]}, N: 3}
			},
			args: func(i int) []any {
				p := advSeq(i+1, 2)
				return []any{[2]*frontend.Tensor{advSeq(i, 2), advSeq(i+2, 2)}, &p}
			},
		}
	}},
	{"host-read-argmax-drives-gather", 7, func() *advProg {
		return &advProg{
			fn: func(x *frontend.Tensor) *frontend.Tensor {
				idx := x.Argmax(0, false).Int64s()
				return x.Gather(frontend.FromSlice([]int64{idx[0], 0}), 0)
			},
			args:   func(i int) []any { return []any{advSeq(i, 4)} },
			breaks: true,
		}
	}},
	{"attention-captured-causal", 6, func() *advProg {
		causal := false
		return &advProg{
			fn: func(q *frontend.Tensor) *frontend.Tensor {
				return frontend.Attention(q, q.Mul(frontend.Scalar(0.5)), q, frontend.AttentionOptions{Causal: causal})
			},
			before: func(i int) { causal = i%2 == 1 },
			args: func(i int) []any {
				xs := make([]float32, 1*2*3*4)
				for j := range xs {
					xs[j] = float32(math.Sin(float64(i + j)))
				}
				return []any{frontend.FromSlice(xs, 1, 2, 3, 4)}
			},
		}
	}},
	{"escape-int-cast-and-assigned-intermediate", 7, func() *advProg {
		var k1, k2, k3 *frontend.Tensor
		return &advProg{
			fn: func(x *frontend.Tensor) (*frontend.Tensor, error) {
				out := x.Neg()
				if k1 != nil {
					out = out.Add(k1.Cast(frontend.Float32)).Add(k2.Cast(frontend.Float32)).Add(k3)
				}
				k1 = x.Argmax(0, true).BroadcastTo(3)
				k2 = x.Mul(frontend.Scalar(3)).Cast(frontend.Int64)
				h := x.Mul(frontend.Scalar(2))
				if err := h.AddInPlace(frontend.Scalar(1)); err != nil { // a pending tensor updated
					return nil, err
				}
				k3 = h
				return out, nil
			},
			args: func(i int) []any { return []any{advSeq(i, 3)} },
		}
	}},
}

// pick returns a if c, else b.
func pick(c bool, a, b *frontend.Tensor) *frontend.Tensor {
	if c {
		return a
	}
	return b
}

func TestAdversarialNeverStale(t *testing.T) {
	replayed := 0
	for _, tc := range advCases {
		runAdvCase(t, tc)
		if advReplays[tc.name] > 0 {
			replayed++
		} else {
			t.Logf("%s: no call replayed", tc.name)
		}
	}
	// Most programs must exercise the replay (else this tests tracing).
	if replayed < len(advCases)*2/3 {
		t.Fatalf("only %d of %d programs replayed a call", replayed, len(advCases))
	}
}

// TestAdversarialConcurrentCalls calls one compiled function from
// goroutines, each with its own inputs, and compares with eager.
func TestAdversarialConcurrentCalls(t *testing.T) {
	w := fs(0.5, -1, 2)
	fn := func(x *frontend.Tensor, k int) *frontend.Tensor {
		h := x
		for range k {
			h = h.Mul(w).Tanh()
		}
		return h.Sum(nil, false)
	}
	for _, be := range []string{frontend.InterpBackend, frontend.AOTEagerBackend} {
		c := frontend.MustCompile(fn, frontend.Options{Backend: be})
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		want := make([][]float64, 8)
		for g := range 8 {
			for i := range 6 {
				want[g] = append(want[g], fn(advSeq(g*10+i, 3), (g+i)%3).Item())
			}
		}
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 6 {
					x := advSeq(g*10+i, 3)
					want := want[g][i]
					res, err := c.Invoke(x, (g+i)%3)
					if err != nil {
						errs <- err
						return
					}
					if got := res[0].(*frontend.Tensor).Item(); math.Abs(got-want) > 1e-4 {
						errs <- fmt.Errorf("goroutine %d call %d: got %v, want %v", g, i, got, want)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("%s: %v", be, err)
		}
	}
}

// TestEscapedIntermediateIsComputedLater: a tensor fn keeps in Go state
// without returning it (a KV cache rebound by Concat, the last
// activation) is computed when it is read or used later — after a traced
// call and after a replayed one — as eagerly, instead of failing with
// "escaped … never computed".
func TestEscapedIntermediateIsComputedLater(t *testing.T) {
	for _, be := range []string{frontend.InterpBackend, frontend.AOTEagerBackend} {
		var cache, last *frontend.Tensor
		c := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor {
			cache = frontend.Concat(0, cache, x.Mul(frontend.Scalar(2)))
			out := x.Add(frontend.Scalar(1))
			if last != nil {
				out = out.Add(last)
			}
			last = x.Neg() // not returned
			return out.Sum(nil, false)
		}, frontend.Options{Backend: be, Dynamic: frontend.DynamicFalse})
		cache = fs(0)
		wantCache := []float64{0}
		var wantLast []float64
		for i := range 6 {
			x := fs(float32(i), 1)
			if i == 3 {
				// read between calls: computed once, then used as an input
				if got := last.Float64s(); len(got) != 2 || got[0] != -2 {
					t.Fatalf("%s: last = %v (%v)", be, got, last.Err())
				}
			}
			res, err := c.Call(x)
			if err != nil {
				t.Fatalf("%s call %d: %v", be, i, err)
			}
			want := float64(i) + 1 + 2
			for _, v := range wantLast {
				want += v
			}
			if got := res[0].Item(); got != want {
				t.Fatalf("%s call %d: got %v, want %v", be, i, got, want)
			}
			wantCache = append(wantCache, float64(2*i), 2)
			wantLast = []float64{-float64(i), -1}
			if got := cache.Float64s(); fmt.Sprint(got) != fmt.Sprint(wantCache) {
				t.Fatalf("%s call %d: cache %v (%v), want %v", be, i, got, cache.Err(), wantCache)
			}
		}
		// The cache grows, so every call traces; the function without it
		// replays: check the replayed path too.
		var keep *frontend.Tensor
		r := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor {
			keep = x.Mul(frontend.Scalar(3))
			return x.Neg()
		}, frontend.Options{Backend: be})
		for i := range 4 {
			if _, err := r.Call(fs(float32(i))); err != nil {
				t.Fatal(err)
			}
			if got := keep.Item(); got != 3*float64(i) {
				t.Fatalf("%s replay %d: kept %v (%v), want %v", be, i, got, keep.Err(), 3*i)
			}
		}
		if r.Stats().Replays == 0 {
			t.Fatalf("%s: no call was replayed", be)
		}
	}
}

// TestFlattenHeadsSizeOneDynamic: a head split and merge (ReshapeS,
// Flatten) on a dynamic graph whose batch and time are 1: canonicalize
// merged the two reshapes into one whose -1 inferred from the input
// (s0) differs from the recorded floordiv(s0, 2)*2, and the verifier
// rejected the graph.
func TestFlattenHeadsSizeOneDynamic(t *testing.T) {
	c := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor {
		b, tt, ch := x.Size(0), x.Size(1), x.Size(2)
		h := x.ReshapeS(b, tt, frontend.Sz(2), ch.DivInt(2)).Transpose(0, 2, 1, 3)
		return h.Transpose(0, 2, 1, 3).Flatten(2, 3)
	}, frontend.Options{Backend: frontend.InterpBackend, Dynamic: frontend.DynamicTrue})
	res, err := c.Call(frontend.FromSlice([]float32{1, 2, 3, 4}, 1, 1, 4))
	if err != nil {
		t.Fatal(err)
	}
	if got := res[0].Float32s(); fmt.Sprint(got) != "[1 2 3 4]" {
		t.Fatalf("got %v", got)
	}
}

// TestConcurrentCallsOfTwoCompiledSharingWeights: two compiled functions
// capturing the same weight, called from two goroutines at once. Each
// call routes ops on the weight to the call using it as an input, so the
// calls recorded each other's ops and crashed (nil placeholder in
// finishReplay); compiled calls are now serialized process-wide.
func TestConcurrentCallsOfTwoCompiledSharingWeights(t *testing.T) {
	w := fs(1, 2, 3)
	mk := func(k float32) *frontend.Compiled {
		return frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor {
			h := w.Mul(x)
			for range 20 {
				h = w.Mul(h.Mul(frontend.Scalar(k))).Tanh()
			}
			return h
		}, frontend.Options{Backend: frontend.InterpBackend})
	}
	cs := []*frontend.Compiled{mk(0.5), mk(-0.25)}
	var want []string
	for _, c := range cs {
		r, err := c.Call(fs(1, 1, 1))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprint(r[0].Float32s()))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 200 {
				r, err := c.Call(fs(1, 1, 1))
				if err == nil && fmt.Sprint(r[0].Float32s()) != want[i] {
					err = fmt.Errorf("call %d: %v, want %v", n, r[0].Float32s(), want[i])
				}
				if err != nil {
					errs <- fmt.Errorf("function %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestRecursiveCompiledCallIsAnError: a compiled function calling itself
// deadlocked on its own lock; it is an error now. A compiled function
// calling another one still works (nested-compiled in advCases).
func TestRecursiveCompiledCallIsAnError(t *testing.T) {
	var c *frontend.Compiled
	c = frontend.MustCompile(func(x *frontend.Tensor) (*frontend.Tensor, error) {
		r, err := c.Call(x)
		if err != nil {
			return nil, err
		}
		return r[0], nil
	}, frontend.Options{})
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(fs(1))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "called itself") {
			t.Fatalf("got %v, want the recursion error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a recursive compiled call deadlocked")
	}
}

// TestAdversarialGradSequences: a gradient whose function reads a
// captured flag and a captured weight, both changed between calls, is
// the gradient of the function as it is at each call.
func TestAdversarialGradSequences(t *testing.T) {
	flag := false
	w := fs(1, 2, 3)
	loss := func(x *frontend.Tensor) *frontend.Tensor {
		if flag {
			return x.Mul(w).Sum(nil, false)
		}
		return x.Mul(x).Mul(w).Sum(nil, false)
	}
	for _, be := range []string{frontend.AOTEagerBackend, frontend.InterpBackend} {
		g := frontend.ValueAndGrad(loss).WithOptions(frontend.Options{Backend: be})
		for i := range 6 {
			flag = i%2 == 1
			w = advSeq(i+20, 3)
			x := advSeq(i, 3)
			vals, grads, err := g.Call(x)
			if err != nil {
				t.Fatalf("%s call %d: %v", be, i, err)
			}
			wv, xv := w.Float64s(), x.Float64s()
			want, wantLoss := make([]float64, 3), 0.0
			for j := range 3 {
				if flag {
					want[j], wantLoss = wv[j], wantLoss+xv[j]*wv[j]
				} else {
					want[j], wantLoss = 2*xv[j]*wv[j], wantLoss+xv[j]*xv[j]*wv[j]
				}
			}
			if got := vals[0].Item(); math.Abs(got-wantLoss) > 1e-4 {
				t.Fatalf("%s call %d: loss %v, want %v", be, i, got, wantLoss)
			}
			for j, v := range grads[0].Float64s() {
				if math.Abs(v-want[j]) > 1e-4 {
					t.Fatalf("%s call %d: grad %v, want %v", be, i, grads[0].Float64s(), want)
				}
			}
		}
	}
}

// TestAttentionDefaultScaleDynamicTrue: Attention's default scale 1/√D
// under Dynamic true (every dim symbolic) failed in graph-decompose ("the
// default scale 1/√D needs a static D"); the frontend reads D (which
// specializes the graph) and passes the scale.
func TestAttentionDefaultScaleDynamicTrue(t *testing.T) {
	xs := make([]float32, 2*3*4)
	for j := range xs {
		xs[j] = float32(math.Sin(float64(j)))
	}
	fn := func(q *frontend.Tensor) *frontend.Tensor {
		return frontend.Attention(q, q, q, frontend.AttentionOptions{Causal: true})
	}
	want := fn(frontend.FromSlice(xs, 1, 2, 3, 4)).Float32s()
	c := frontend.MustCompile(fn, frontend.Options{Backend: frontend.InterpBackend, Dynamic: frontend.DynamicTrue})
	for range 3 {
		res, err := c.Call(frontend.FromSlice(xs, 1, 2, 3, 4))
		if err != nil {
			t.Fatal(err)
		}
		if got := res[0].Float32s(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

// TestFailedReplayRestoresInPlaceState: a replayed call that updates a
// tensor in place and then fails (a panic, an error) must give the
// tensor its value back, as a traced call does (docs/frontend-state.md);
// it marked the tensor escaped, and every later call failed with
// "tensor escaped … never computed".
func TestFailedReplayRestoresInPlaceState(t *testing.T) {
	for _, be := range []string{frontend.InterpBackend, frontend.AOTEagerBackend} {
		for _, panics := range []bool{true, false} {
			s := fs(1, 1)
			n := 0
			c := frontend.MustCompile(func(x *frontend.Tensor) (*frontend.Tensor, error) {
				n++
				if err := s.AddInPlace(x); err != nil {
					return nil, err
				}
				if n == 3 {
					if panics {
						panic("boom")
					}
					return nil, errors.New("third")
				}
				return s.Mul(x), nil
			}, frontend.Options{Backend: be})
			want := []float32{1, 1}
			for i := range 6 {
				res, err := c.Call(fs(1, 2))
				if i == 2 {
					if err == nil {
						t.Fatalf("%s: call 2 did not fail", be)
					}
				} else {
					if err != nil {
						t.Fatalf("%s panics=%v call %d: %v", be, panics, i, err)
					}
					want = []float32{want[0] + 1, want[1] + 2}
					if got := res[0].Float32s(); fmt.Sprint(got) != fmt.Sprint([]float32{want[0], want[1] * 2}) {
						t.Fatalf("%s call %d: got %v", be, i, got)
					}
				}
				if got := s.Float32s(); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%s panics=%v call %d: state %v (%v), want %v", be, panics, i, got, s.Err(), want)
				}
			}
			if c.Stats().Replays == 0 {
				t.Fatalf("%s: no replay", be)
			}
		}
	}
}

// TestFailedCallKeepsStoredTensors: a tensor fn stores in Go state before
// it fails (a panic on one call) stays usable, as eagerly, whether the
// failing call was traced or replayed (a replayed one marked it escaped,
// and every later call failed).
func TestFailedCallKeepsStoredTensors(t *testing.T) {
	for _, failAt := range []int{1, 3} {
		var kept *frontend.Tensor
		n := 0
		c := frontend.MustCompile(func(x *frontend.Tensor) *frontend.Tensor {
			n++
			k := x.Mul(frontend.Scalar(2))
			out := x.Neg()
			if kept != nil {
				out = out.Add(kept)
			}
			kept = k
			if n == failAt {
				panic("boom")
			}
			return out
		}, frontend.Options{Backend: frontend.InterpBackend})
		for i := range 5 {
			r, err := c.Call(fs(float32(i), 1))
			if (err != nil) != (i+1 == failAt) {
				t.Fatalf("failAt %d call %d: err %v", failAt, i, err)
			}
			if err == nil && i > 0 {
				if got := r[0].Float32s(); fmt.Sprint(got) != fmt.Sprint([]float32{float32(-i + 2*(i-1)), 1}) {
					t.Fatalf("failAt %d call %d: got %v", failAt, i, got)
				}
			}
			if got := kept.Float32s(); fmt.Sprint(got) != fmt.Sprint([]float32{float32(2 * i), 2}) {
				t.Fatalf("failAt %d call %d: kept %v (%v)", failAt, i, got, kept.Err())
			}
		}
		if failAt == 3 && c.Stats().Replays == 0 {
			t.Fatal("no replay")
		}
	}
}

// TestFullgraphFailureMidSequence: a replayed call that diverges, updates
// a tensor in place and is refused by Fullgraph at a host read: reading
// what it stored in Go state crashed (nil IR value: the restored tensor
// was still among the dead graph's pending ones); the state is restored
// and later calls are right.
func TestFullgraphFailureMidSequence(t *testing.T) {
	for _, be := range []string{frontend.InterpBackend, frontend.AOTEagerBackend} {
		s := fs(0, 0)
		var kept *frontend.Tensor
		flag := false
		c := frontend.MustCompile(func(x *frontend.Tensor) (*frontend.Tensor, error) {
			if err := s.AddInPlace(x); err != nil {
				return nil, err
			}
			h := s.Mul(x)
			kept = h.Add(frontend.Scalar(1))
			if flag && h.Sum(nil, false).Item() > 0 {
				return h.Neg(), nil
			}
			return h, nil
		}, frontend.Options{Backend: be, Fullgraph: true})
		want := []float32{0, 0}
		for i := range 6 {
			flag = i == 2
			r, err := c.Call(fs(1, 2))
			next := []float32{want[0] + 1, want[1] + 2}
			wantKept := fmt.Sprint([]float32{next[0] + 1, next[1]*2 + 1})
			if i == 2 {
				if err == nil || !strings.Contains(err.Error(), "Fullgraph") {
					t.Fatalf("%s call 2: %v, want the Fullgraph error", be, err)
				}
			} else {
				if err != nil {
					t.Fatalf("%s call %d: %v", be, i, err)
				}
				want = next
				if got := r[0].Float32s(); fmt.Sprint(got) != fmt.Sprint([]float32{want[0], want[1] * 2}) {
					t.Fatalf("%s call %d: got %v", be, i, got)
				}
			}
			if got := kept.Float32s(); fmt.Sprint(got) != wantKept {
				t.Fatalf("%s call %d: kept %v (%v), want %v", be, i, got, kept.Err(), wantKept)
			}
			if got := s.Float32s(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s call %d: state %v, want %v", be, i, got, want)
			}
		}
	}
}

// advInPlace names the programs that update tensors in place.
var advInPlace = map[string]bool{
	"argument-shares-value-with-state":          true,
	"assign-argument":                           true,
	"assign-argument-aliased-twice":             true,
	"assign-argument-returned-and-state-alias":  true,
	"assign-captured-and-read-after":            true,
	"assign-from-argument-directly":             true,
	"assign-in-branch":                          true,
	"assign-returned-target":                    true,
	"assign-struct-field-and-alias":             true,
	"assign-target-replaced-between-calls":      true,
	"assign-twice-and-self":                     true,
	"feed-result-back-with-inplace":             true,
	"kv-cache-assign-slot":                      true,
	"map-state-assign":                          true,
	"nested-inner-updates-outer-input":          true,
	"optimizer-over-param-slice-growing":        true,
	"optimizer-step":                            true,
	"pytree-model-argument":                     true,
	"shared-value-not-clobbered-by-inplace":     true,
	"assign-then-host-read":                     true,
	"assign-shape-error-third-call":             true,
	"assign-to-escaped-inside":                  true,
	"two-compiled-share-state":                  true,
	"escaped-used-as-argument-and-assign-value": true,
	"escaped-then-assigned-outside":             true,
}

// TestAdversarialFailedCallMidSequence runs every program with its third
// call failing on entry (in both worlds): the calls after it must be
// right (the failed call must leave no replay state or stamps behind).
func TestAdversarialFailedCallMidSequence(t *testing.T) {
	advInject = true
	defer func() { advInject = false }()
	for _, tc := range advCases {
		runAdvCase(t, tc)
	}
}

// TestAdversarialFailureAfterFnRan: the third call fails after fn ran
// (its Go side effects done), in both worlds, for the programs that do
// not update tensors in place (a failed compiled call gives those their
// values back, by design, where eagerly they stay updated).
func TestAdversarialFailureAfterFnRan(t *testing.T) {
	advInject, advInjectAfter = true, true
	defer func() { advInject, advInjectAfter = false, false }()
	for _, tc := range advCases {
		if advInPlace[tc.name] {
			continue
		}
		runAdvCase(t, tc)
	}
}
