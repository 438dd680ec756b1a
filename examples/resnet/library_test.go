package resnet

import (
	"strings"
	"sync"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/internal/testsize"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
)

// libraryCount is a frontend backend that lowers each graph it is given
// with the convolutions on the libraries (convert-loop-to-gpu conv=cudnn)
// and counts the filter gradients, then runs the graph on the
// interpreter backend.
type libraryCount struct {
	t *testing.T
	// semantics also runs each lowered graph against the graph in the
	// interpreter on random inputs.
	semantics bool
	mu        sync.Mutex
	filters   int
	convs     int // convolution nests left on Strata's kernels
}

func (c *libraryCount) Compile(g *frontend.Graph) (frontend.Executable, error) {
	src := ir.Sprint(g.Module, ir.PrintOptions{Generic: true})
	const pipeline = "builtin.module(lower-to-loop,convert-loop-to-gpu{conv=cudnn})"
	if c.semantics {
		if err := passtest.CheckSemantics(&passtest.Program{Func: g.Func, Source: src}, pipeline, 1); err != nil {
			c.t.Errorf("%s: %.2000v", g.Func, err)
		}
	}
	text := ir.Sprint(passtest.Run(c.t, src, pipeline), ir.PrintOptions{})
	c.mu.Lock()
	c.filters += strings.Count(text, `direction = "backward_filter"`)
	c.convs += strings.Count(text, `mapping = "mma"`)
	c.mu.Unlock()
	be, _ := frontend.LookupBackend(frontend.InterpBackend)
	return be.Compile(g)
}

// TestTinyResNetMixedFilterGradients lowers the tiny ResNet's bf16
// mixed-precision training step with conv=cudnn: every weight gradient
// (nine: the stem, three and a downsample in each of two blocks) becomes
// the library's filter gradient, also the one whose transposing epilogue
// graph-fuse fused into the convolution (its nest runs over the output's
// first two dimensions swapped: permutedConvPlan), and (long tests) the
// lowered graphs compute what the graphs do. That nest got a wrong
// gradient from the tensor-core kernel and the library before convPlan
// checked which operand carries the window (the long test caught it).
func TestTinyResNetMixedFilterGradients(t *testing.T) {
	chk := &libraryCount{t: t, semantics: testsize.Long()}
	frontend.RegisterBackend("resnet-library-count", chk)
	mixedStep(t, "resnet-library-count")
	if chk.filters != 9 {
		t.Errorf("%d filter gradients on the library, want 9", chk.filters)
	}
	t.Logf("%d filter gradients, %d convolutions left on Strata's kernels", chk.filters, chk.convs)
}
