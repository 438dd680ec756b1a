package resnet

import (
	"os"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/runtime/interp"
)

func TestZZDump(t *testing.T) {
	frontend.RegisterBackend("dump", frontend.BackendFunc(func(g *frontend.Graph) (frontend.Executable, error) {
		os.WriteFile("/tmp/cnn/resnet50.mlir", []byte(ir.Sprint(g.Module, ir.PrintOptions{Generic: true})), 0o644)
		return frontend.ExecutableFunc(func(in []*interp.Tensor) ([]*interp.Tensor, error) {
			x, _ := interp.FromFloat64s(ir.F32, []int64{64, 1000}, make([]float64, 64000))
			return []*interp.Tensor{x}, nil
		}), nil
	}))
	m := New(ResNet50)
	nn.SetTraining(m, false)
	nn.Cast(m, frontend.BFloat16)
	g := nn.NewRNG(3)
	x := g.Normal(1, 64, 3, 224, 224).Cast(frontend.BFloat16)
	c, err := nn.Compile(m, func(in ...*frontend.Tensor) []*frontend.Tensor { return []*frontend.Tensor{m.Forward(in[0]).Cast(frontend.Float32)} }, 1, frontend.Options{Backend: "dump", Fullgraph: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(x); err != nil {
		t.Fatal(err)
	}
}
