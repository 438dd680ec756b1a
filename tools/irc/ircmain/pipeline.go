package ircmain

import (
	"errors"
	"io"

	"github.com/strata-ir/strata/ir"
)

// pipeline is the pass manager built from the command line.
type pipeline struct{}

// newPipeline builds the pass manager the flags ask for; nil when there is
// nothing to run.
func (t *tool) newPipeline(f *pipelineFlags) (*pipeline, error) {
	if f.pipeline == "" {
		return nil, nil
	}
	return nil, errors.New("--pass-pipeline: the pass manager is not built yet")
}

func (p *pipeline) run(mod *ir.Operation, log io.Writer) error { return nil }

// listPasses prints the registered passes and pipelines.
func (t *tool) listPasses() int {
	if err := error(nil); err != nil {
		return t.errorf("%v", err)
	}
	return ExitOK
}

func reproducerPipeline(text string) (string, error) {
	return "", errors.New("the pass manager is not built yet")
}
