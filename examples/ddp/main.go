// Command ddp trains a two-layer perceptron data-parallel: every rank
// computes the loss and gradients of its part of the batch in one compiled
// step (graph-autodiff's joint function), graph-data-parallel averages the
// gradients across the ranks in buckets that overlap the backward kernels,
// and every rank applies the same SGD update, so the weights stay equal.
//
// On N GPUs of one machine, one command starts one process per GPU:
//
//	go run ./examples/ddp -nproc 8
//
// The launcher gives child r STRATA_RANK=r, STRATA_WORLD_SIZE=N,
// STRATA_NCCL_ADDR (rank 0's localhost port for NCCL's unique id) and
// CUDA_VISIBLE_DEVICES=r; each child opens its GPU, joins the NCCL
// communicator (runtime/nccl) and trains. -steps, -batch (per rank) and
// -bucket-mb tune the run; rank 0 prints the loss of each step, and every
// rank a checksum of its final weights: they agree, as the ranks' weights
// are the same.
//
// Without GPUs, -sim N runs the same compiled step on N simulated ranks in
// the reference interpreter (interp.RunRanks) and checks that it reaches
// the weights that one rank reaches on the whole batch.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"

	_ "github.com/strata-ir/strata/autodiff" // graph-autodiff
	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	_ "github.com/strata-ir/strata/passes/dataparallel" // graph-data-parallel
	_ "github.com/strata-ir/strata/passes/togpu"        // lower-to-gpu
	rexec "github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/runtime/nccl"
)

// The model: d inputs, h hidden units, o outputs.
const d, h, o = 64, 256, 16

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ddp:", err)
		os.Exit(1)
	}
}

type config struct {
	nproc, sim, steps, batch, bucketMB int
	lr                                 float64
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ddp", flag.ContinueOnError)
	var c config
	fs.IntVar(&c.nproc, "nproc", 0, "start this many processes, one per GPU (0: this process is one rank, from $STRATA_RANK and $STRATA_WORLD_SIZE)")
	fs.IntVar(&c.sim, "sim", 0, "simulate this many ranks in the interpreter (no GPU)")
	fs.IntVar(&c.steps, "steps", 20, "training steps")
	fs.IntVar(&c.batch, "batch", 32, "rows per rank and step")
	fs.IntVar(&c.bucketMB, "bucket-mb", 25, "gradient bucket size in MiB")
	fs.Float64Var(&c.lr, "lr", 0.05, "SGD learning rate")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case c.steps < 1 || c.batch < 1 || c.bucketMB < 1:
		return fmt.Errorf("-steps, -batch and -bucket-mb must be positive")
	case c.sim < 0 || c.nproc < 0:
		return fmt.Errorf("-sim and -nproc take a positive number of ranks")
	case c.sim > 0:
		return simulate(c, out)
	case c.nproc > 0:
		return launch(c, args, out)
	}
	return rank(c, out)
}

// source is the loss of one rank's batch of b rows.
func source(b int) string {
	return fmt.Sprintf(`func.func @loss(%%w1: tensor<%[2]dx%[3]dxf32>, %%b1: tensor<%[3]dxf32>, %%w2: tensor<%[3]dx%[4]dxf32>, %%x: tensor<%[1]dx%[2]dxf32>, %%y: tensor<%[1]dx%[4]dxf32>) -> tensor<f32> {
  %%m1 = "graph.matmul"(%%x, %%w1) : (tensor<%[1]dx%[2]dxf32>, tensor<%[2]dx%[3]dxf32>) -> tensor<%[1]dx%[3]dxf32>
  %%a1 = "graph.add"(%%m1, %%b1) : (tensor<%[1]dx%[3]dxf32>, tensor<%[3]dxf32>) -> tensor<%[1]dx%[3]dxf32>
  %%t1 = "graph.tanh"(%%a1) : (tensor<%[1]dx%[3]dxf32>) -> tensor<%[1]dx%[3]dxf32>
  %%m2 = "graph.matmul"(%%t1, %%w2) : (tensor<%[1]dx%[3]dxf32>, tensor<%[3]dx%[4]dxf32>) -> tensor<%[1]dx%[4]dxf32>
  %%e = "graph.sub"(%%m2, %%y) : (tensor<%[1]dx%[4]dxf32>, tensor<%[1]dx%[4]dxf32>) -> tensor<%[1]dx%[4]dxf32>
  %%s = "graph.mul"(%%e, %%e) : (tensor<%[1]dx%[4]dxf32>, tensor<%[1]dx%[4]dxf32>) -> tensor<%[1]dx%[4]dxf32>
  %%l = "graph.reduce_mean"(%%s) : (tensor<%[1]dx%[4]dxf32>) -> tensor<f32>
  return %%l : tensor<f32>
}`, b, d, h, o)
}

// compileStep returns the module of the training step on b rows per
// rank, with graph-data-parallel when ddp is set, lowered for the GPU when
// gpu is set.
func compileStep(b, bucketMB int, ddp, gpu bool) (*ir.Operation, error) {
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, source(b), ir.ParseOptions{Filename: "ddp.mlir"})
	if err != nil {
		return nil, err
	}
	pipeline := "graph-autodiff{joint=true wrt=0,1,2}"
	if ddp {
		pipeline += fmt.Sprintf(",graph-data-parallel{bucket-mb=%d}", bucketMB)
	}
	if gpu {
		pipeline += ",lower-to-gpu"
	}
	pm, err := passes.Parse("builtin.module(" + pipeline + ")")
	if err != nil {
		return nil, err
	}
	return m, pm.Run(ctx, m)
}

// data is the synthetic task: y = tanh(x·a)·c for fixed a, c, x uniform.
type data struct{ a, c []float64 }

func newData() data {
	rng := rand.New(rand.NewPCG(7, 7))
	dt := data{a: make([]float64, d*8), c: make([]float64, 8*o)}
	for i := range dt.a {
		dt.a[i] = rng.NormFloat64() / math.Sqrt(d)
	}
	for i := range dt.c {
		dt.c[i] = rng.NormFloat64() / math.Sqrt(8)
	}
	return dt
}

// batch returns the global batch of step s (rows of all ranks, rank
// r's rows r·b … (r+1)·b-1).
func (dt data) batch(step, rows int) (x, y []float64) {
	rng := rand.New(rand.NewPCG(uint64(step), 11))
	x, y = make([]float64, rows*d), make([]float64, rows*o)
	for i := range x {
		x[i] = rng.Float64()*2 - 1
	}
	for r := range rows {
		var hid [8]float64
		for k := range 8 {
			for j := range d {
				hid[k] += x[r*d+j] * dt.a[j*8+k]
			}
			hid[k] = math.Tanh(hid[k])
		}
		for k := range o {
			for j := range 8 {
				y[r*o+k] += hid[j] * dt.c[j*o+k]
			}
		}
	}
	return x, y
}

// initWeights returns w1, b1, w2, the same on every rank.
func initWeights() [][]float64 {
	rng := rand.New(rand.NewPCG(1, 1))
	w := [][]float64{make([]float64, d*h), make([]float64, h), make([]float64, h*o)}
	for i := range w[0] {
		w[0][i] = rng.NormFloat64() / math.Sqrt(d)
	}
	for i := range w[2] {
		w[2][i] = rng.NormFloat64() / math.Sqrt(h)
	}
	return w
}

var shapes = [][]int64{{d, h}, {h}, {h, o}}

func tensor(vs []float64, shape ...int64) interp.Value {
	t, err := interp.FromFloat64s(ir.F32, shape, vs)
	if err != nil {
		panic(err) // shapes are the program's own
	}
	return t
}

// stepArgs are the joint function's arguments for rows x, y.
func stepArgs(w [][]float64, x, y []float64, rows int) []interp.Value {
	one := tensor([]float64{1})
	return []interp.Value{tensor(w[0], shapes[0]...), tensor(w[1], shapes[1]...), tensor(w[2], shapes[2]...),
		tensor(x, int64(rows), d), tensor(y, int64(rows), o), one}
}

// floats reads a result (a tensor from the interpreter, a buffer from the
// GPU).
func floats(v interp.Value) ([]float64, error) {
	switch v := v.(type) {
	case *interp.Tensor:
		return v.Float64s(), nil
	case *interp.Buffer:
		t, err := v.Tensor()
		if err != nil {
			return nil, err
		}
		return t.Float64s(), nil
	}
	return nil, fmt.Errorf("unexpected result %s", v)
}

// update applies SGD with the step's results (loss, then gradients).
func update(w [][]float64, res []interp.Value, lr float64) (float64, error) {
	loss, err := floats(res[0])
	if err != nil {
		return 0, err
	}
	for i := range w {
		g, err := floats(res[1+i])
		if err != nil {
			return 0, err
		}
		for j := range w[i] {
			w[i][j] = float64(float32(w[i][j] - lr*g[j]))
		}
	}
	return loss[0], nil
}

func checksum(w [][]float64) float64 {
	s := 0.0
	for _, ws := range w {
		for i, v := range ws {
			s += v * float64(i%7+1)
		}
	}
	return s
}

// simulate trains on n simulated ranks and on one rank with the global
// batch, and compares.
func simulate(c config, out io.Writer) error {
	n := c.sim
	step, err := compileStep(c.batch, c.bucketMB, true, false)
	if err != nil {
		return err
	}
	single, err := compileStep(c.batch*n, c.bucketMB, false, false)
	if err != nil {
		return err
	}
	dt := newData()
	wN, w1 := initWeights(), initWeights()
	for s := range c.steps {
		x, y := dt.batch(s, c.batch*n)
		in := make([][]interp.Value, n)
		for r := range n {
			in[r] = stepArgs(wN, x[r*c.batch*d:(r+1)*c.batch*d], y[r*c.batch*o:(r+1)*c.batch*o], c.batch)
		}
		res, err := interp.RunRanks(context.Background(), step, "loss_joint", n, in)
		if err != nil {
			return err
		}
		loss, err := update(wN, res[0], c.lr)
		if err != nil {
			return err
		}
		r1, err := interp.New(single).Call("loss_joint", stepArgs(w1, x, y, c.batch*n)...)
		if err != nil {
			return err
		}
		if _, err := update(w1, r1, c.lr); err != nil {
			return err
		}
		fmt.Fprintf(out, "step %d: rank 0 loss %.6f\n", s, loss)
	}
	worst := 0.0
	for i := range wN {
		for j := range wN[i] {
			worst = max(worst, math.Abs(wN[i][j]-w1[i][j]))
		}
	}
	fmt.Fprintf(out, "%d simulated ranks × %d rows: weights checksum %.6f; one rank × %d rows: %.6f; largest difference %.3g\n",
		n, c.batch, checksum(wN), n*c.batch, checksum(w1), worst)
	if worst > 1e-4 {
		return fmt.Errorf("data-parallel weights differ from single-rank weights by %g", worst)
	}
	return nil
}

// launch starts n copies of this program, one rank each.
func launch(c config, args []string, out io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("picking a port for the bootstrap: %w", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var child []string
	for i := 0; i < len(args); i++ { // the children get every flag but -nproc
		switch a := args[i]; {
		case a == "-nproc" || a == "--nproc":
			i++
		case len(a) > 7 && (a[:7] == "-nproc=" || a[:8] == "--nproc="):
		default:
			child = append(child, a)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, c.nproc)
	var mu sync.Mutex
	for r := range c.nproc {
		cmd := exec.Command(self, child...)
		cmd.Env = append(os.Environ(), nccl.EnvRank+"="+strconv.Itoa(r), nccl.EnvWorldSize+"="+strconv.Itoa(c.nproc),
			nccl.EnvAddr+"="+addr, "CUDA_VISIBLE_DEVICES="+strconv.Itoa(r))
		pw := &prefixWriter{w: out, mu: &mu, prefix: fmt.Sprintf("[rank %d] ", r)}
		cmd.Stdout, cmd.Stderr = pw, pw
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting rank %d: %w", r, err)
		}
		wg.Go(func() {
			if err := cmd.Wait(); err != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// prefixWriter prefixes each write (a line, from the children's Fprintf)
// with the rank.
type prefixWriter struct {
	w      io.Writer
	mu     *sync.Mutex
	prefix string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := io.WriteString(p.w, p.prefix); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}

// rank trains as one rank of the job the environment describes.
func rank(c config, out io.Writer) error {
	cfg, err := nccl.ConfigFromEnv()
	if err != nil {
		return err
	}
	rt, err := rexec.Open(0)
	if err != nil {
		return fmt.Errorf("rank %d: %w (without GPUs, try -sim N)", cfg.Rank, err)
	}
	defer rt.Close()
	comm, err := nccl.FromEnv(rt.Device())
	if err != nil {
		return fmt.Errorf("rank %d: %w", cfg.Rank, err)
	}
	defer comm.Close()
	rt.SetCommunicator(comm)
	m, err := compileStep(c.batch, c.bucketMB, true, true)
	if err != nil {
		return err
	}
	prog, err := rexec.Compile(m, rexec.Options{})
	if err != nil {
		return err
	}
	dt := newData()
	w := initWeights()
	n := cfg.Size
	for s := range c.steps {
		x, y := dt.batch(s, c.batch*n)
		r := cfg.Rank
		res, err := prog.Run(rt, "loss_joint", stepArgs(w, x[r*c.batch*d:(r+1)*c.batch*d], y[r*c.batch*o:(r+1)*c.batch*o], c.batch))
		if err != nil {
			return err
		}
		loss, err := update(w, res, c.lr)
		if err != nil {
			return err
		}
		if cfg.Rank == 0 {
			fmt.Fprintf(out, "step %d: loss %.6f\n", s, loss)
		}
	}
	fmt.Fprintf(out, "rank %d of %d: weights checksum %.6f\n", cfg.Rank, n, checksum(w))
	return nil
}
