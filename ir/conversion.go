package ir

import (
	"errors"
	"fmt"
	"slices"
)

// UnrealizedConversionCastOp is the op the default materializations build:
// it stands for a value of one type seen as another until both sides of a
// conversion agree (MLIR's builtin.unrealized_conversion_cast).
const UnrealizedConversionCastOp = "builtin.unrealized_conversion_cast"

// ErrNoMatch is returned (possibly wrapped) by a ConversionPattern that does
// not apply to an op; it must not have changed the IR then. Any other error
// aborts the conversion.
var ErrNoMatch = errors.New("pattern does not match")

// Legality says what a ConversionTarget thinks of an op.
type Legality uint8

// Legality values. Unknown ops are left alone by a partial conversion and
// must be converted by a full one.
const (
	Unknown Legality = iota
	Legal
	Illegal
)

// ConversionTarget says which ops may remain after a conversion: by op name
// or by dialect, statically or through a callback. An op's own entry wins
// over its dialect's.
type ConversionTarget struct {
	// Ctx creates the ops that patterns and materializations build.
	Ctx      *Context
	ops      map[string]legalityRule
	dialects map[string]legalityRule
	unknown  func(*Operation) bool
}

type legalityRule struct {
	legality Legality
	dynamic  func(*Operation) bool // when set, decides Legal or Illegal
}

// NewConversionTarget returns a target that knows no op yet.
func NewConversionTarget(ctx *Context) *ConversionTarget {
	return &ConversionTarget{Ctx: ctx, ops: map[string]legalityRule{}, dialects: map[string]legalityRule{}}
}

// AddLegalOp marks the named ops legal.
func (t *ConversionTarget) AddLegalOp(names ...string) {
	t.setOps(names, legalityRule{legality: Legal})
}

// AddIllegalOp marks the named ops illegal: they must be converted.
func (t *ConversionTarget) AddIllegalOp(names ...string) {
	t.setOps(names, legalityRule{legality: Illegal})
}

// AddDynamicallyLegalOp makes the named ops legal exactly when legal says so.
func (t *ConversionTarget) AddDynamicallyLegalOp(legal func(*Operation) bool, names ...string) {
	t.setOps(names, legalityRule{dynamic: legal})
}

// AddLegalDialect marks every op of the named dialects legal.
func (t *ConversionTarget) AddLegalDialect(names ...string) {
	t.setDialects(names, legalityRule{legality: Legal})
}

// AddIllegalDialect marks every op of the named dialects illegal.
func (t *ConversionTarget) AddIllegalDialect(names ...string) {
	t.setDialects(names, legalityRule{legality: Illegal})
}

// AddDynamicallyLegalDialect makes the ops of the named dialects legal
// exactly when legal says so.
func (t *ConversionTarget) AddDynamicallyLegalDialect(legal func(*Operation) bool, names ...string) {
	t.setDialects(names, legalityRule{dynamic: legal})
}

// MarkUnknownOpDynamicallyLegal decides the ops no other rule covers.
func (t *ConversionTarget) MarkUnknownOpDynamicallyLegal(legal func(*Operation) bool) {
	t.unknown = legal
}

func (t *ConversionTarget) setOps(names []string, r legalityRule) {
	for _, n := range names {
		t.ops[n] = r
	}
}

func (t *ConversionTarget) setDialects(names []string, r legalityRule) {
	for _, n := range names {
		t.dialects[n] = r
	}
}

// Legality returns what the target thinks of op.
func (t *ConversionTarget) Legality(op *Operation) Legality {
	r, ok := t.ops[op.Name()]
	if !ok {
		r, ok = t.dialects[DialectOf(op.Name())]
	}
	if !ok {
		if t.unknown == nil {
			return Unknown
		}
		r = legalityRule{dynamic: t.unknown}
	}
	if r.dynamic != nil {
		if r.dynamic(op) {
			return Legal
		}
		return Illegal
	}
	return r.legality
}

// Materialization builds a value of type t from inputs at the builder's
// insertion point, or returns nil when it cannot.
type Materialization func(b *Builder, t Type, inputs []*Value, loc Location) *Value

// TypeConverter maps the types of a source level to those of a target
// level, one type to one type, and builds the casts that bridge the two
// while a conversion is under way.
type TypeConverter struct {
	conversions []func(Type) (Type, bool)
	// SourceMaterialization turns a converted value back into its original
	// type, for users not converted yet; TargetMaterialization does the
	// opposite, for operands handed to patterns. Both default to
	// builtin.unrealized_conversion_cast.
	SourceMaterialization, TargetMaterialization Materialization
}

// AddConversion registers f, which returns the converted type and true, or
// false when it does not handle t. Conversions added last are tried first;
// a type no conversion handles is illegal.
func (tc *TypeConverter) AddConversion(f func(Type) (Type, bool)) {
	tc.conversions = append(tc.conversions, f)
}

// Convert returns the type t converts to.
func (tc *TypeConverter) Convert(t Type) (Type, bool) {
	for _, f := range slices.Backward(tc.conversions) {
		if r, ok := f(t); ok {
			return r, true
		}
	}
	return nil, false
}

// IsLegal reports whether t converts to itself.
func (tc *TypeConverter) IsLegal(t Type) bool {
	r, ok := tc.Convert(t)
	return ok && r == t
}

// IsLegalOp reports whether every operand and result type of op and every
// argument of the blocks in its regions is legal.
func (tc *TypeConverter) IsLegalOp(op *Operation) bool {
	for _, v := range op.Operands() {
		if !tc.IsLegal(v.Type()) {
			return false
		}
	}
	for _, v := range op.results {
		if !tc.IsLegal(v.typ) {
			return false
		}
	}
	for _, r := range op.regions {
		for b := r.first; b != nil; b = b.next {
			for _, a := range b.args {
				if !tc.IsLegal(a.typ) {
					return false
				}
			}
		}
	}
	return true
}

// ConvertTypes converts each of ts, failing on the first it cannot.
func (tc *TypeConverter) ConvertTypes(ts []Type) ([]Type, error) {
	out := make([]Type, len(ts))
	for i, t := range ts {
		r, ok := tc.Convert(t)
		if !ok {
			return nil, fmt.Errorf("cannot convert type %s", t)
		}
		out[i] = r
	}
	return out, nil
}

// castMaterialization builds an unrealized_conversion_cast.
func castMaterialization(b *Builder, t Type, inputs []*Value, loc Location) *Value {
	return b.Op(UnrealizedConversionCastOp, loc, inputs, []Type{t}).Result(0)
}

// ConversionPattern converts ops named Root ("" for any op). Rewrite gets
// the op's operands already remapped to their converted values, and
// replaces or changes op through r. It returns ErrNoMatch, before changing
// anything, when it does not apply.
type ConversionPattern struct {
	Name    string
	Root    string
	Benefit int
	Rewrite func(r *ConversionRewriter, op *Operation, operands []*Value) error
}

// ConversionRewriter is the Rewriter handed to conversion patterns. Its
// ReplaceOp accepts values of converted types, bridging to the users not
// converted yet with source materializations.
type ConversionRewriter struct {
	*Rewriter
	conv *conversion
}

// TypeConverter returns the conversion's type converter, or nil.
func (r *ConversionRewriter) TypeConverter() *TypeConverter { return r.conv.tc }

// ReplaceOp replaces op's results with vals and erases op. A value whose
// type differs from the result it replaces reaches the remaining users
// through a source materialization.
func (r *ConversionRewriter) ReplaceOp(op *Operation, vals []*Value) {
	bridged := make([]*Value, len(vals))
	for i, v := range vals {
		bridged[i] = v
		if res := op.results[i]; v != nil && v.typ != res.typ && res.HasUses() {
			r.SetInsertionPointBefore(op)
			bridged[i] = r.conv.materialize(r.conv.tc.sourceMat(), res.typ, v, op.Loc())
		}
	}
	r.Rewriter.ReplaceOp(op, bridged)
}

// ConvertRegionTypes converts the types of the arguments of every block in
// region with the conversion's type converter (or tc, when not nil). The
// old-typed uses read a source materialization of the new argument until
// they are converted.
func (r *ConversionRewriter) ConvertRegionTypes(region *Region, tc *TypeConverter) error {
	if tc == nil {
		tc = r.conv.tc
	}
	if tc == nil {
		return errors.New("ConvertRegionTypes: no type converter")
	}
	for b := region.first; b != nil; b = b.next {
		for _, a := range b.args {
			nt, ok := tc.Convert(a.typ)
			if !ok {
				return fmt.Errorf("cannot convert block argument type %s", a.typ)
			}
			if nt == a.typ {
				continue
			}
			old := a.typ
			a.SetType(nt)
			if !a.HasUses() {
				continue
			}
			var loc Location = UnknownLoc{}
			if region.parent != nil {
				loc = region.parent.Loc()
			}
			r.SetInsertionPointToStart(b)
			cast := r.conv.materialize(tc.sourceMat(), old, a, loc)
			for u := range a.Uses() {
				if u.owner != cast.op {
					r.Listener.OpModified(u.owner)
					u.Set(cast)
				}
			}
		}
	}
	return nil
}

func (tc *TypeConverter) sourceMat() Materialization {
	if tc == nil || tc.SourceMaterialization == nil {
		return castMaterialization
	}
	return tc.SourceMaterialization
}

func (tc *TypeConverter) targetMat() Materialization {
	if tc == nil || tc.TargetMaterialization == nil {
		return castMaterialization
	}
	return tc.TargetMaterialization
}

// ApplyPartialConversion converts every illegal op nested in root with the
// patterns; ops the target does not know are left as they are. It fails
// with a diagnostic per op it could not legalize, and then leaves the IR as
// it found it (ops and values nested in root are restored from a copy, so
// pointers to them taken before the call are stale after a failure).
func ApplyPartialConversion(root *Operation, target *ConversionTarget, patterns []*ConversionPattern, tc *TypeConverter) error {
	return applyConversion(root, target, patterns, tc, false)
}

// ApplyFullConversion is ApplyPartialConversion where every op nested in
// root must end up legal, unknown ones included.
func ApplyFullConversion(root *Operation, target *ConversionTarget, patterns []*ConversionPattern, tc *TypeConverter) error {
	return applyConversion(root, target, patterns, tc, true)
}

// conversion is the state of one conversion; it listens to the rewriter.
type conversion struct {
	target   *ConversionTarget
	patterns []*ConversionPattern
	tc       *TypeConverter
	full     bool
	rw       *ConversionRewriter

	pending []*Operation // ops inserted by patterns, to legalize next
	erased  map[*Operation]bool
	// casts maps each materialization the driver built to its input.
	casts     map[*Operation]*Value
	castOrder []*Operation
	// applied lists, for an op built by patterns, the patterns that led to
	// it; they are not applied to it again, which bounds the recursion.
	applied map[*Operation][]*ConversionPattern
	current []*ConversionPattern // the chain of the pattern running now
}

func applyConversion(root *Operation, target *ConversionTarget, patterns []*ConversionPattern, tc *TypeConverter, full bool) error {
	ctx := target.Ctx
	if ctx == nil {
		ctx = contextOf(root)
	}
	c := &conversion{
		target:   target,
		patterns: slices.Clone(patterns),
		tc:       tc,
		full:     full,
		erased:   map[*Operation]bool{},
		casts:    map[*Operation]*Value{},
		applied:  map[*Operation][]*ConversionPattern{},
	}
	slices.SortStableFunc(c.patterns, func(a, b *ConversionPattern) int { return b.Benefit - a.Benefit })
	rw := NewRewriter(ctx)
	rw.Listener = c
	c.rw = &ConversionRewriter{Rewriter: rw, conv: c}

	backup := root.Clone(nil)
	var diags DiagnosticList
	var ops []*Operation
	for _, r := range root.regions {
		r.Walk(func(o *Operation) bool { ops = append(ops, o); return true })
	}
	for len(ops) > 0 {
		for _, op := range ops {
			if err := c.legalize(op); err != nil {
				diags = append(diags, Diagnostics(err)...)
			}
		}
		ops, c.pending = c.pending, nil
	}
	if len(diags) == 0 {
		diags = c.finish()
	}
	if len(diags) > 0 {
		restore(root, backup)
		return diags
	}
	backup.Erase()
	return nil
}

// legalize converts op if the target requires it.
func (c *conversion) legalize(op *Operation) error {
	if c.erased[op] || c.casts[op] != nil {
		return nil
	}
	switch c.target.Legality(op) {
	case Legal:
		return nil
	case Unknown:
		if !c.full {
			return nil
		}
	}
	for _, p := range c.patterns {
		if p.Root != "" && p.Root != op.Name() || slices.Contains(c.applied[op], p) {
			continue
		}
		c.rw.SetInsertionPointBefore(op)
		operands := c.remap(op)
		c.current = append(slices.Clone(c.applied[op]), p)
		err := p.Rewrite(c.rw, op, operands)
		c.current = nil
		if errors.Is(err, ErrNoMatch) {
			continue
		}
		if err != nil {
			if _, ok := err.(*Diagnostic); ok {
				return err
			}
			return Errorf(op.Loc(), "'%s' op conversion pattern %s failed: %v", op.Name(), p.Name, err)
		}
		if c.erased[op] || c.target.Legality(op) == Legal || !c.full && c.target.Legality(op) == Unknown {
			return nil
		}
	}
	if c.full {
		return Errorf(op.Loc(), "failed to legalize operation '%s'", op.Name())
	}
	return Errorf(op.Loc(), "failed to legalize operation '%s' that was explicitly marked illegal", op.Name())
}

// remap returns op's operands as patterns see them: the converted value
// behind a source materialization, or a target materialization of an
// operand whose type the type converter changes.
func (c *conversion) remap(op *Operation) []*Value {
	vals := op.Operands()
	for i, v := range vals {
		if def := v.DefiningOp(); def != nil {
			if in := c.casts[def]; in != nil {
				vals[i] = in
				continue
			}
		}
		if c.tc == nil {
			continue
		}
		if nt, ok := c.tc.Convert(v.typ); ok && nt != v.typ {
			vals[i] = c.materialize(c.tc.targetMat(), nt, v, op.Loc())
		}
	}
	return vals
}

// materialize builds a cast of in to type t at the rewriter's insertion
// point and remembers it as the driver's own.
func (c *conversion) materialize(m Materialization, t Type, in *Value, loc Location) *Value {
	v := m(&c.rw.Builder, t, []*Value{in}, loc)
	if v == nil {
		v = castMaterialization(&c.rw.Builder, t, []*Value{in}, loc)
	}
	if def := v.DefiningOp(); def != nil {
		c.casts[def] = in
		c.castOrder = append(c.castOrder, def)
	}
	return v
}

// finish removes the materializations left unused, folds cast round trips,
// and in a full conversion reports the ones still needed.
func (c *conversion) finish() DiagnosticList {
	for _, cast := range slices.Backward(c.castOrder) {
		if c.erased[cast] {
			continue
		}
		res := cast.results[0]
		// cast(cast(x)) back to x's type is x.
		if in := c.casts[cast]; in != nil {
			if def := in.DefiningOp(); def != nil && c.casts[def] != nil && c.casts[def].typ == res.typ {
				c.rw.ReplaceAllUsesWith(res, c.casts[def])
			}
		}
		if !res.HasUses() {
			c.rw.EraseOp(cast)
		}
	}
	var diags DiagnosticList
	for _, cast := range c.castOrder {
		if c.erased[cast] || !c.full || c.target.Legality(cast) == Legal {
			continue
		}
		diags = append(diags, Errorf(cast.Loc(), "failed to legalize unresolved materialization from %s to %s that remained live after conversion",
			cast.Operand(0).Type(), cast.Result(0).Type()))
	}
	return diags
}

// restore puts backup's regions back into root, dropping what the failed
// conversion left.
func restore(root, backup *Operation) {
	for i, r := range root.regions {
		for _, b := range r.Blocks() {
			b.Erase()
		}
		r.TakeBody(backup.regions[i])
	}
	backup.Erase()
}

// OpInserted implements RewriteListener: ops built by patterns are
// legalized too, without the patterns that built them.
func (c *conversion) OpInserted(op *Operation) {
	c.pending = append(c.pending, op)
	if c.current != nil {
		c.applied[op] = c.current
	}
}

// OpModified implements RewriteListener.
func (c *conversion) OpModified(*Operation) {}

// OpErased implements RewriteListener.
func (c *conversion) OpErased(op *Operation) { c.erased[op] = true }

// OpReplaced implements RewriteListener.
func (c *conversion) OpReplaced(*Operation, []*Value) {}
