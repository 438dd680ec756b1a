package passes

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/strata-ir/strata/internal/atomicfile"
	"github.com/strata-ir/strata/ir"
)

// Instrumentation selects what a PassManager observes and reports while it
// runs. The zero value observes nothing and does not verify; irc fills it
// from its flags.
type Instrumentation struct {
	// VerifyEach runs the verifier on the op each pass ran on, after the
	// pass, unless the pass reported that it changed nothing
	// (State.MarkUnchanged).
	VerifyEach bool
	// PrintBefore and PrintAfter dump the op before/after every pass;
	// PrintAfterChange dumps it only when the pass changed it (compared by
	// hashing the printed IR); PrintAfterFailure dumps it, labelled as
	// failed, when a pass or the verifier after it fails.
	PrintBefore, PrintAfter, PrintAfterChange, PrintAfterFailure bool
	// Output receives the IR dumps (stderr in irc).
	Output io.Writer
	// Timing, when set, receives an MLIR-style execution time report.
	Timing io.Writer
	// Statistics, when set, receives the pass statistics report.
	Statistics io.Writer
	// TraceFile, when set, is written with one Chrome trace event per pass
	// execution (load it in chrome://tracing or Perfetto).
	TraceFile string
	// Reproducer, when set, is written on failure with the IR as it was
	// before the pipeline and the pipeline itself, in the format of MLIR's
	// crash reproducers; RunReproducer replays it.
	Reproducer string
	// DebugRewrites is handed to passes that log the rewrites they apply.
	DebugRewrites io.Writer
	// AfterPass, when set, is called after each pass that succeeded (and
	// passed the verifier, under VerifyEach) with the pass's name and the
	// op it ran on, so that a caller can start work on the IR as a pass
	// leaves it (the frontend starts the vendor libraries' warm-ups once
	// convert-loop-to-gpu has made the library calls, before the
	// cleanups after it). Passes on sibling ops run in parallel call it
	// at once from several goroutines. It must not change the IR.
	AfterPass func(pass string, op *ir.Operation)
}

const rule = "===-------------------------------------------------------------------------===\n"

func reportHeader(title string) string {
	pad := (len(rule) - 1 - len(title)) / 2
	return rule + strings.Repeat(" ", pad) + title + "\n" + rule
}

// writeTiming prints the wall time of every pass and nested pipeline as a
// tree in pipeline order, times of parallel runs summed, like
// mlir-opt --mlir-timing.
func (r *runner) writeTiming(w io.Writer, pm *OpPassManager, total time.Duration) error {
	var b strings.Builder
	b.WriteString(reportHeader("... Execution time report ..."))
	fmt.Fprintf(&b, "  Total Execution Time: %.4f seconds\n\n", total.Seconds())
	b.WriteString("  ----Wall Time----  ----Name----\n")
	row := func(d time.Duration, depth int, name string) {
		pct := 0.0
		if total > 0 {
			pct = 100 * d.Seconds() / total.Seconds()
		}
		fmt.Fprintf(&b, "  %8.4f (%5.1f%%)  %s%s\n", d.Seconds(), pct, strings.Repeat("  ", depth), name)
	}
	var walk func(pm *OpPassManager, depth int) time.Duration
	walk = func(pm *OpPassManager, depth int) time.Duration {
		var sum time.Duration
		for _, it := range pm.items {
			if it.nested != nil {
				d := r.times[it.nested]
				row(d, depth, fmt.Sprintf("'%s' Pipeline", it.nested.anchor))
				walk(it.nested, depth+1)
				sum += d
				continue
			}
			d := r.times[it.pass]
			row(d, depth, it.pass.pass.Name())
			sum += d
		}
		return sum
	}
	r.mu.Lock()
	inPasses := walk(pm, 0)
	r.mu.Unlock()
	row(max(total-inPasses, 0), 0, "Rest")
	row(total, 0, "Total")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeStatistics prints every pass's statistics in pipeline order.
func writeStatistics(w io.Writer, pm *OpPassManager) error {
	var b strings.Builder
	b.WriteString(reportHeader("... Pass statistics report ..."))
	var walk func(pm *OpPassManager, depth int)
	walk = func(pm *OpPassManager, depth int) {
		ind := strings.Repeat("  ", depth)
		for _, it := range pm.items {
			if it.nested != nil {
				fmt.Fprintf(&b, "%s'%s' Pipeline\n", ind, it.nested.anchor)
				walk(it.nested, depth+1)
				continue
			}
			fmt.Fprintf(&b, "%s%s\n", ind, it.pass.pass.Name())
			for _, s := range it.pass.stats.sorted() {
				fmt.Fprintf(&b, "%s  (S) %d %s - %s\n", ind, s.Value(), s.Name, s.Description)
			}
		}
	}
	walk(pm, 0)
	_, err := io.WriteString(w, b.String())
	return err
}

// traceEvent is one pass execution, for the Chrome trace.
type traceEvent struct {
	name, op   string
	start, dur time.Duration
	tid        int
}

// writeTrace writes the Chrome trace-event JSON file.
func (r *runner) writeTrace(path string) error {
	type event struct {
		Name string            `json:"name"`
		Cat  string            `json:"cat"`
		Ph   string            `json:"ph"`
		Ts   float64           `json:"ts"`
		Dur  float64           `json:"dur"`
		Pid  int               `json:"pid"`
		Tid  int               `json:"tid"`
		Args map[string]string `json:"args"`
	}
	r.mu.Lock()
	evs := make([]event, len(r.events))
	for i, e := range r.events {
		evs[i] = event{Name: e.name, Cat: "pass", Ph: "X", Ts: micros(e.start), Dur: micros(e.dur),
			Pid: 1, Tid: e.tid, Args: map[string]string{"op": e.op}}
	}
	r.mu.Unlock()
	data, err := json.MarshalIndent(struct {
		TraceEvents     []event `json:"traceEvents"`
		DisplayTimeUnit string  `json:"displayTimeUnit"`
	}{evs, "ms"}, "", " ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if err := atomicfile.Write(path, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
		return fmt.Errorf("writing trace: %w", err)
	}
	return nil
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// writeReproducer writes ir followed by the external_resources section that
// mlir-opt's --run-reproducer reads.
func writeReproducer(path, ir, pipeline string, verifyEach bool) error {
	text := fmt.Sprintf("%s\n{-#\n  external_resources: {\n    mlir_reproducer: {\n      pipeline: %s,\n      disable_threading: true,\n      verify_each: %t\n    }\n  }\n#-}\n",
		strings.TrimRight(ir, "\n"), strconv.Quote(pipeline), verifyEach)
	if err := atomicfile.Write(path, func(w io.Writer) error { _, err := io.WriteString(w, text); return err }); err != nil {
		return fmt.Errorf("writing reproducer: %w", err)
	}
	return nil
}

// resourcesAttr is where ir.Parse keeps a file's {-# ... #-} sections.
const resourcesAttr = "strata.file_resources"

var (
	reproPipeline  = regexp.MustCompile(`pipeline\s*:\s*("(?:[^"\\]|\\.)*")`)
	reproThreading = regexp.MustCompile(`disable_threading\s*:\s*(true|false)`)
	reproVerify    = regexp.MustCompile(`verify_each\s*:\s*(true|false)`)
)

// ReproducerPipeline extracts the pass manager recorded in a reproducer
// module's mlir_reproducer resource, with its threading and verification
// settings, and removes the resource from the module.
func ReproducerPipeline(module *ir.Operation) (*PassManager, error) {
	res, _ := module.Attributes().Get(resourcesAttr).(ir.StringAttr)
	if !strings.Contains(res.Value, "mlir_reproducer") {
		return nil, errors.New("no mlir_reproducer entry in the file's external_resources")
	}
	m := reproPipeline.FindStringSubmatch(res.Value)
	if m == nil {
		return nil, errors.New("the mlir_reproducer entry has no pipeline")
	}
	text, err := strconv.Unquote(m[1])
	if err != nil {
		return nil, fmt.Errorf("bad reproducer pipeline string %s: %w", m[1], err)
	}
	pm, err := Parse(text)
	if err != nil {
		return nil, err
	}
	if m := reproThreading.FindStringSubmatch(res.Value); m != nil {
		pm.DisableThreading = m[1] == "true"
	}
	if m := reproVerify.FindStringSubmatch(res.Value); m != nil {
		pm.Instr.VerifyEach = m[1] == "true"
	}
	var kept ir.DictAttr
	for _, na := range module.Attributes() {
		if na.Name != resourcesAttr {
			kept = append(kept, na)
		}
	}
	module.SetAttributes(kept)
	return pm, nil
}

// RunReproducer reads a reproducer file written on a failure, and runs its
// pipeline on its IR with instr (VerifyEach and threading as recorded). It
// returns the module and the pipeline's error, so a fixed bug shows as nil.
func RunReproducer(ctx *ir.Context, path string, instr Instrumentation) (*ir.Operation, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	module, err := ir.Parse(ctx, string(src), ir.ParseOptions{Filename: path})
	if err != nil {
		return nil, err
	}
	pm, err := ReproducerPipeline(module)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	verify := pm.Instr.VerifyEach
	pm.Instr = instr
	pm.Instr.VerifyEach = verify
	if err := ir.Verify(module); err != nil {
		return nil, err
	}
	return module, pm.Run(ctx, module)
}
