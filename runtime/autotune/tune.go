package autotune

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
)

// Topic is the log topic of one line per measured candidate
// (STRATA_LOGS=autotune).
const Topic = "autotune"

// DefaultBudget bounds a search's wall time (compiles included).
const DefaultBudget = 2 * time.Second

// Options bound and report a search.
type Options struct {
	// Budget is the search's wall time; 0 is DefaultBudget. The default
	// configuration is measured whatever the budget.
	Budget time.Duration
	// Warmup and Iters are the launches before timing and the timed
	// launches of a candidate (0: 2 and 10).
	Warmup, Iters int
	// Progress receives a progress bar; nil shows none (see Terminal).
	Progress io.Writer
	// Sustained, when set, times a candidate as a long run of calls does
	// (a benchmark's loop, a training run): after the search, the
	// candidates within FinalMargin of the fastest, FinalCandidates at
	// most, are timed with it, in turn, twice, and the fastest of that
	// final round is picked. The search's few launches a candidate run
	// at the clock an idle device starts with; under sustained load the
	// clock drops, by more for some kernels than for others (bench/NOTES.md,
	// session 18).
	Sustained Measure
}

// The final round's finalists: within FinalMargin of the search's
// fastest, at most FinalCandidates of them; Tune times each over about
// SustainedMs of launches after SustainedWarmupMs of them (10 to 2000
// launches), as the bench's rows time a program (do_bench's 100 ms).
const (
	FinalMargin       = 0.03
	FinalCandidates   = 3
	SustainedMs       = 100.0
	SustainedWarmupMs = 30.0
)

// Terminal returns f when it is a terminal and nil otherwise, for
// Options.Progress: a progress bar only where someone watches.
func Terminal(f *os.File) io.Writer {
	if f != nil && term.IsTerminal(int(f.Fd())) {
		return f
	}
	return nil
}

// Measure times one candidate: the median milliseconds of one call.
type Measure func(togpu.Config) (float64, error)

// Search measures cands in order (the first is the baseline, measured
// even past the budget) until the budget is spent and returns the
// fastest. Candidates that fail (a kernel out of resources, say) are
// logged and skipped; Search fails only when every measured one did.
func Search(name string, cands []togpu.Config, measure Measure, opts Options) (Decision, error) {
	if len(cands) == 0 {
		return Decision{}, errors.New("autotune: no candidates")
	}
	budget := opts.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	var bar *progressbar.ProgressBar
	if opts.Progress != nil {
		bar = progressbar.NewOptions(len(cands),
			progressbar.OptionSetWriter(opts.Progress),
			progressbar.OptionSetDescription("autotune "+name),
			progressbar.OptionShowCount(),
			progressbar.OptionClearOnFinish())
		defer bar.Finish()
	}
	start := time.Now()
	best := Decision{MS: -1}
	var errs []error
	var measured []timedConfig
	for i, c := range cands {
		if i > 0 && time.Since(start) >= budget {
			logs.Printf(Topic, "%s: budget of %v spent after %d of %d candidates", name, budget, i, len(cands))
			break
		}
		ms, err := measure(c)
		best.Tried++
		if bar != nil {
			_ = bar.Add(1)
		}
		if err != nil {
			logs.Printf(Topic, "%s: %s: failed: %v", name, ConfigString(c), err)
			errs = append(errs, fmt.Errorf("%s: %w", ConfigString(c), err))
			continue
		}
		logs.Printf(Topic, "%s: %s: %.4f ms", name, ConfigString(c), ms)
		measured = append(measured, timedConfig{c, ms})
		if i == 0 {
			best.DefaultMS = ms
		}
		if best.MS < 0 || ms < best.MS {
			best.Config, best.MS = c, ms
		}
	}
	if best.MS < 0 {
		return Decision{}, fmt.Errorf("autotune %s: every candidate failed: %w", name, errors.Join(errs...))
	}
	if opts.Sustained != nil {
		if c, ok := finalRound(name, measured, best.MS, opts.Sustained); ok {
			i := slices.IndexFunc(measured, func(m timedConfig) bool { return m.cfg == c })
			best.Config, best.MS = c, measured[i].ms
		}
	}
	logs.Printf(Topic, "%s: picked %s: %.4f ms (default %.4f ms, %d candidates in %v)",
		name, ConfigString(best.Config), best.MS, best.DefaultMS, best.Tried, time.Since(start).Round(time.Millisecond))
	return best, nil
}

// timedConfig is a configuration the search measured, and its time.
type timedConfig struct {
	cfg togpu.Config
	ms  float64
}

// finalRound times the finalists among measured (within FinalMargin of
// fastest, the fastest FinalCandidates) with sustained, in turn, twice,
// and returns the one with the smallest time (its better round), false
// when there are fewer than two finalists or each failed. It logs every
// time.
func finalRound(name string, measured []timedConfig, fastest float64, sustained Measure) (togpu.Config, bool) {
	var fin []timedConfig
	for _, m := range measured {
		if m.ms <= fastest*(1+FinalMargin) {
			fin = append(fin, m)
		}
	}
	slices.SortStableFunc(fin, func(a, b timedConfig) int { return cmp.Compare(a.ms, b.ms) })
	if len(fin) > FinalCandidates {
		fin = fin[:FinalCandidates]
	}
	if len(fin) < 2 {
		return togpu.Config{}, false
	}
	// A finalist's time is its better round; one that fails is out.
	best := make([]float64, len(fin))
	for i := range best {
		best[i] = math.Inf(1)
	}
	failed := make([]bool, len(fin))
	for round := range 2 {
		for i, f := range fin {
			if failed[i] {
				continue
			}
			ms, err := sustained(f.cfg)
			if err != nil {
				logs.Printf(Topic, "%s: final round %d: %s: failed: %v", name, round, ConfigString(f.cfg), err)
				failed[i] = true
				continue
			}
			logs.Printf(Topic, "%s: final round %d: %s: %.4f ms sustained (search %.4f)", name, round, ConfigString(f.cfg), ms, f.ms)
			best[i] = min(best[i], ms)
		}
	}
	pick := -1
	for i := range fin {
		if !failed[i] && (pick < 0 || best[i] < best[pick]) {
			pick = i
		}
	}
	if pick < 0 {
		return togpu.Config{}, false
	}
	return fin[pick].cfg, true
}

// Compiler compiles a loop-level module (lower-to-loop's output) to a
// Program with a given configuration; each call works on a clone.
type Compiler struct {
	Ctx  *ir.Context
	Loop *ir.Operation // the loop-level builtin.module, left unchanged
	Exec exec.Options
	// Instr instruments the pipeline runs (nil: none).
	Instr passes.Instrumentation
}

// Compile lowers a clone of c.Loop with GPUPipeline(cfg) and compiles it.
func (c *Compiler) Compile(cfg togpu.Config) (*exec.Program, error) {
	pm, err := passes.Parse("builtin.module(" + GPUPipeline(cfg) + ")")
	if err != nil {
		return nil, err
	}
	pm.Instr = c.Instr
	mod := c.Loop.Clone(map[*ir.Value]*ir.Value{})
	if err := pm.Run(c.Ctx, mod); err != nil {
		return nil, err
	}
	return exec.Compile(mod, c.Exec)
}

// Result is what Tune found.
type Result struct {
	Decision
	Program *exec.Program // compiled with Decision.Config
	Cached  bool          // the decision came from the database
}

// Tune returns the best configuration for host function fn on args: from
// db when it holds key (only the chosen configuration is compiled), else
// by a Search over the Candidates of the default compile's kernels (for
// rt's device: the wgmma tilings first on sm_90, none elsewhere) and
// cuBLASLt's unless the program asks for Strata's kernels (MatmulAttr), each
// compiled with compile and timed on rt with events, the finalists then
// timed again over about SustainedMs of launches each (opts.Sustained
// unless set: see Options); the decision is then
// stored in db (nil: not kept).
func Tune(rt *exec.Runtime, db *DB, key Key, fn string, args []interp.Value, compile func(togpu.Config) (*exec.Program, error), opts Options) (Result, error) {
	if db != nil {
		if d, ok := db.Lookup(key); ok {
			p, err := compile(d.Config)
			if err != nil {
				return Result{}, err
			}
			logs.Printf(Topic, "@%s: cached %s (%.4f ms, default %.4f ms)", fn, ConfigString(d.Config), d.MS, d.DefaultMS)
			return Result{Decision: d, Program: p, Cached: true}, nil
		}
	}
	def, err := compile(togpu.DefaultConfig)
	if err != nil {
		return Result{}, err
	}
	warmup, iters := opts.Warmup, opts.Iters
	if warmup <= 0 {
		warmup = 2
	}
	if iters <= 0 {
		iters = 10
	}
	programs := map[togpu.Config]*exec.Program{togpu.DefaultConfig: def}
	short := map[togpu.Config]float64{}
	measure := func(cfg togpu.Config) (float64, error) {
		p := programs[cfg]
		if p == nil {
			var err error
			if p, err = compile(cfg); err != nil {
				return 0, err
			}
			programs[cfg] = p
		}
		ms, err := p.RunTimed(rt, fn, args, warmup, iters)
		short[cfg] = ms
		return ms, err
	}
	if opts.Sustained == nil {
		// About SustainedMs of launches after SustainedWarmupMs of them,
		// counted from the search's time of the candidate.
		opts.Sustained = func(cfg togpu.Config) (float64, error) {
			n := func(total float64) int { return int(min(max(math.Ceil(total/max(short[cfg], 1e-3)), 10), 2000)) }
			return programs[cfg].RunTimed(rt, fn, args, n(SustainedWarmupMs), n(SustainedMs))
		}
	}
	kernels := Kernels(def.Module())
	var major, minor int
	if dev := rt.Device(); dev != nil {
		major, minor = dev.ComputeCapability()
	}
	d, err := Search("@"+fn, withPolicy("@"+fn, def.Module(), kernels, major, minor), measure, opts)
	if err != nil {
		return Result{}, err
	}
	if db != nil {
		if err := db.Store(key, d); err != nil {
			return Result{Decision: d, Program: programs[d.Config]}, err
		}
	}
	return Result{Decision: d, Program: programs[d.Config]}, nil
}
