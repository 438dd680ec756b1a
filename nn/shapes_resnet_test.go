package nn_test

import (
	"fmt"
	"testing"

	"github.com/strata-ir/strata/examples/resnet"
	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/internal/testsize"
	"github.com/strata-ir/strata/nn"
)

// resnetShape is a small ResNet of odd widths (the second stage a
// strided bottleneck with a downsampling shortcut) and its inputs.
type resnetShape struct {
	width, classes int
	im             image
}

func (s resnetShape) String() string {
	return fmt.Sprintf("w%d_cls%d/n%d_%dx%d", s.width, s.classes, s.im.n, s.im.h, s.im.w)
}

// macs is an upper bound of the forward pass's work (the stem's 7×7
// convolution at full resolution dominates the rest four times over).
func (s resnetShape) macs() int {
	return 4 * s.im.n * s.im.h * s.im.w * 3 * 49 * s.width / 4
}

var resnetShapes = []resnetShape{
	{3, 7, image{1, 17, 17}}, {5, 10, image{3, 15, 17}}, {3, 5, image{3, 31, 31}}, {4, 3, image{1, 31, 17}},
}

func newResNet(s resnetShape, seed uint64) *resnet.ResNet {
	return resnet.New(resnet.Config{Blocks: []int{1, 1}, Width: s.width, Classes: s.classes, Seed: seed})
}

// resnetCases yields the covered (shape, dtype) pairs; in a default run,
// when few, those of the first and last shapes only (float32 and bf16).
func resnetCases(t *testing.T, few bool, run func(t *testing.T, seed int, s resnetShape, dt frontend.DType)) {
	cover := testsize.Cover(len(resnetShapes), len(dtypes), nil)
	for i, s := range resnetShapes {
		for j, dt := range dtypes {
			if few && !testsize.Long() && i%3 != 0 {
				continue
			}
			if cover(i, j) {
				t.Run(fmt.Sprintf("%v/%v", s, dt), func(t *testing.T) { run(t, i*len(dtypes)+j, s, dt) })
			}
		}
	}
}

// TestShapesResNetForward runs small ResNets on odd images, in
// evaluation and training mode (batch norm's batch statistics and
// running averages), in float32 and under bf16 autocast, on every model
// path against the eager float64 model.
func TestShapesResNetForward(t *testing.T) {
	resnetCases(t, false, func(t *testing.T, seed int, s resnetShape, dt frontend.DType) {
		x := nn.NewRNG(uint64(seed)).Uniform(-1, 1, s.im.n, 3, s.im.h, s.im.w)
		modes := []bool{false, true}
		if !testsize.Long() {
			modes = modes[seed%2:][:1] // one mode a case, alternating
		}
		for _, training := range modes {
			t.Run(fmt.Sprintf("train%v", training), func(t *testing.T) {
				newNet := func() *resnet.ResNet { return newResNet(s, uint64(seed)) }
				checkResNetForward(t, newNet, training, dt, x, func(t *testing.T, check func(t *testing.T, opts frontend.Options)) {
					forPaths(t, s.macs(), dt, check)
				})
			})
		}
	})
}

// checkResNetForward checks the forward pass of a ResNet made by newNet,
// in training or evaluation mode, in float32 or under autocast to dt, on
// x against the eager float64 model: the logits and the running
// statistics. run runs its check on the paths under test.
func checkResNetForward(t *testing.T, newNet func() *resnet.ResNet, training bool, dt frontend.DType, x *frontend.Tensor, run func(t *testing.T, check func(t *testing.T, opts frontend.Options))) {
	ref := newNet()
	nn.SetTraining(ref, training)
	castModel(t, ref, frontend.Float64)
	want := ref.Forward(x.Cast(dt).Cast(frontend.Float64))
	wantBufs := nn.Tensors(nn.Buffers(ref))
	run(t, func(t *testing.T, opts frontend.Options) {
		m := newNet()
		nn.SetTraining(m, training)
		c, err := nn.Compile(m, func(in ...*frontend.Tensor) []*frontend.Tensor {
			if dt == frontend.Float32 {
				return []*frontend.Tensor{m.Forward(in[0])}
			}
			return nn.Autocast(m, dt, func() []*frontend.Tensor {
				return []*frontend.Tensor{m.Forward(in[0].Cast(dt)).Cast(frontend.Float32)}
			})
		}, 1, opts)
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.Call(x)
		called(t, "forward", err)
		closeTo(t, "logits", out[0], want.Shape(), want.Float64s(), 2*tolOf(dt))
		for k, b := range nn.Buffers(m) {
			closeTo(t, b.Name, b.Tensor(), wantBufs[k].Shape(), wantBufs[k].Float64s(), tolOf(dt))
		}
	})
}

// TestShapesResNetTrainStep runs a training step's loss and gradients
// (float32, and bf16 mixed precision) of small ResNets on odd images on
// every model path: the loss against the eager float64 model's; the
// gradients against the eager float64 model's in float32, and against
// the eager mixed-precision step's in bf16. (Batch norm's backward pass
// in training mode subtracts the gradient's projections, and the
// gradients of the layers below it are small differences of bf16
// products: the stem's weight gradient of the mixed step differs from
// the float64 one by up to 30% of its largest element, eager or
// compiled alike; the float32 step's, by 1e-6.)
func TestShapesResNetTrainStep(t *testing.T) {
	resnetCases(t, true, func(t *testing.T, seed int, s resnetShape, dt frontend.DType) {
		g := nn.NewRNG(uint64(seed))
		x, y := g.Uniform(-1, 1, s.im.n, 3, s.im.h, s.im.w), g.Int64s(s.classes, s.im.n)
		ref := newResNet(s, uint64(seed))
		castModel(t, ref, frontend.Float64)
		refStep := nn.NewGradStep(ref, ref.Loss, 2, frontend.Options{Backend: frontend.EagerBackend})
		wantLoss, wantGrads, err := refStep.Call(x.Cast(dt).Cast(frontend.Float64), y)
		if err != nil {
			t.Fatal(err)
		}
		if dt != frontend.Float32 {
			mixed := newResNet(s, uint64(seed))
			_, wantGrads, err = nn.NewGradStep(mixed, mixed.MixedLoss(dt), 2, frontend.Options{Backend: frontend.EagerBackend}).Call(x, y)
			if err != nil {
				t.Fatal(err)
			}
		}
		forPaths(t, 3*s.macs(), dt, func(t *testing.T, opts frontend.Options) {
			m := newResNet(s, uint64(seed))
			loss := m.Loss
			if dt != frontend.Float32 {
				loss = m.MixedLoss(dt)
			}
			step := nn.NewGradStep(m, loss, 2, opts)
			got, grads, err := step.Call(x, y)
			called(t, "training step", err)
			closeTo(t, "loss", got[0], nil, wantLoss[0].Float64s(), tolOf(dt))
			for i, p := range step.Params() {
				closeTo(t, "gradient of "+p.Name, grads[i], wantGrads[i].Shape(), wantGrads[i].Float64s(), 3*tolOf(dt))
			}
		})
	})
}
