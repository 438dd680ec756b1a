package bench

import (
	"fmt"
	"time"
)

// Quiesce implements Quiescer: it waits until the device has finished the
// work queued so far (a previous measurement's launches and cache clears).
func (g *GPU) Quiesce() error {
	if err := g.rt.Device().Synchronize(); err != nil {
		return fmt.Errorf("nvptx: quiesce: %w", err)
	}
	return nil
}

// LoadsSince implements LoadReporter: the modules of the entry function
// loaded at or after t (by this program or, for the same PTX, another on
// the same device).
func (p *gpuProgram) LoadsSince(t time.Time) (LoadReport, error) {
	loads, err := p.prog.Loads(p.rt, p.entry)
	if err != nil {
		return LoadReport{}, err
	}
	var r LoadReport
	for _, l := range loads {
		if l.At.Before(t) {
			continue
		}
		r.Modules++
		r.Wall += l.Wall
		r.JIT += l.JIT
	}
	return r, nil
}
