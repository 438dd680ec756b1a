// Package dialects lists every dialect of Strata, so that tools and tests
// can load them all at once.
package dialects

import (
	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/builtin"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/dialects/math"
	"github.com/strata-ir/strata/dialects/stablehlo"
	"github.com/strata-ir/strata/ir"
)

// All returns every dialect of the project, lowest level first. A new
// dialect is added here and nowhere else.
func All() []*ir.Dialect {
	return []*ir.Dialect{
		builtin.Dialect,
		funcs.Dialect,
		arith.Dialect,
		math.Dialect,
		graph.Dialect,
		gpu.Dialect,
		loop.Dialect,
		stablehlo.Dialect,
	}
}

// NewContext returns a context with every dialect loaded.
func NewContext() *ir.Context { return ir.NewContext(All()...) }
