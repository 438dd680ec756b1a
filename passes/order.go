package passes

import (
	"fmt"
	"strings"
)

// Order is an ordering constraint between a pass and another pass of the
// same pipeline, declared on the pass's registration (PassInfo.After and
// PassInfo.Before) and checked when a textual pipeline is parsed.
type Order struct {
	// Pass names the other registered pass.
	Pass string
	// Reason says why the order matters; the diagnostic quotes it.
	Reason string
}

// placedPass is a registered pass of a parsed pipeline, in run order, with
// the offset of its name in the pipeline text.
type placedPass struct {
	name string
	pos  int
}

// runOrder lists pm's registered passes in the order they run, nested
// pipelines in place (a nested pipeline runs where it is written).
func (p *pipelineParser) runOrder(pm *OpPassManager, out []placedPass) []placedPass {
	for _, it := range pm.items {
		switch {
		case it.nested != nil:
			out = p.runOrder(it.nested, out)
		case it.pass.info != nil:
			out = append(out, placedPass{it.pass.info.Name, p.posOf[it.pass]})
		}
	}
	return out
}

// checkOrder reports the first ordering constraint (PassInfo.After,
// PassInfo.Before) that the pipeline pm breaks: a pass that must run after
// another placed before it, or one that must run before another placed
// after it. Constraints bind only passes that are both in the pipeline.
func (p *pipelineParser) checkOrder(pm *OpPassManager) error {
	list := p.runOrder(pm, nil)
	for i, a := range list {
		info := Lookup(a.name)
		for _, o := range info.After {
			for _, b := range list[i+1:] {
				if b.name == o.Pass {
					return p.errorf(b.pos, "pass '%s' must run before '%s' (%s), but comes after it", b.name, a.name, o.Reason)
				}
			}
		}
		for _, o := range info.Before {
			for _, b := range list[:i] {
				if b.name == o.Pass {
					return p.errorf(a.pos, "pass '%s' must run before '%s' (%s), but comes after it", a.name, b.name, o.Reason)
				}
			}
		}
	}
	return nil
}

// OrderDoc describes a pass's ordering constraints for --list-passes and
// the generated docs ("" when it has none).
func (info *PassInfo) OrderDoc() string {
	var parts []string
	for _, o := range info.After {
		parts = append(parts, fmt.Sprintf("after %s (%s)", o.Pass, o.Reason))
	}
	for _, o := range info.Before {
		parts = append(parts, fmt.Sprintf("before %s (%s)", o.Pass, o.Reason))
	}
	if len(parts) == 0 {
		return ""
	}
	return "Runs " + strings.Join(parts, "; ") + "."
}
