// Package ir is the core of Strata's intermediate representation: operations,
// values, blocks and regions; the builtin types and attributes; locations and
// diagnostics; the parser and printer for MLIR's textual format; the verifier;
// and the pattern-rewriting drivers that passes build on.
//
// The IR is modelled on MLIR. An Operation has a name, operands, results,
// properties (inherent attributes, printed as <{...}>), discardable attributes,
// regions and successor blocks. Types are uniqued, so two types are equal
// exactly when they are the same Go value and can be compared with ==.
// Attributes are immutable values compared with AttrEqual.
//
// Ops become known to a Context through dialects (see Dialect and OpDef);
// an op without a definition is "unregistered" and is accepted only when the
// context allows unregistered dialects.
package ir
