package frontend

import (
	"errors"
	"fmt"
)

// errAhead ends a Precompile's session once it compiled a graph: the
// graph does not run, so its results have no value and the function's
// later ops are not recorded.
var errAhead = errors.New("frontend: traced by Precompile, which does not run the function (call it for values)")

// Precompile traces fn on args as a call of c does and compiles the
// graph it records, without running it, so that a later call recording
// the same graph on inputs that pass its guards finds it compiled. Only
// the arguments' shapes and dtypes matter: their elements are not read.
//
// With a backend that compiles several graphs at once (the nvptx
// backend), the compile goes on in the background after Precompile
// returns, and the call that needs it waits for it; the other built-in
// backends compile before Precompile returns. A training loop starts its
// optimizer's compile this way while the gradient step compiles (package
// optim), so that the first step costs the longer of the two, not their
// sum.
//
// fn runs as in a call, but the tensors it records have no value: its
// results are discarded, tensors it assigns in place (Assign) keep their
// values, and a tensor it stores elsewhere is not computed (an error
// when used). A graph break (a host read) ends the trace: the graph
// before it is compiled, the rest of fn is not. An error of fn's trace
// (a shape or dtype error, located at its line) is returned; that of the
// compile is the error of the call that needs the graph (the next call
// compiles it again), as if that call had compiled it.
func (c *Compiled) Precompile(args ...any) error {
	nargs := len(c.in)
	if !c.variadic && len(args) != nargs || c.variadic && len(args) < nargs-1 {
		return fmt.Errorf("frontend: Precompile: the compiled function takes %d arguments, got %d", nargs, len(args))
	}
	in, err := c.values(args)
	if err != nil {
		return fmt.Errorf("frontend: Precompile: %w", err)
	}
	unlock, err := c.lockCompiled()
	if err != nil {
		return err
	}
	defer unlock()
	if c.disabled || disabledAll.Load() {
		return nil // calls run eagerly: nothing to compile
	}
	leaves := treeLeaves(in)
	vals := make([]tensorData, len(leaves))
	for i, t := range leaves {
		v, err := t.data("argument of Precompile")
		if err != nil {
			return fmt.Errorf("frontend: Precompile: argument tensor %d: %w", i, err)
		}
		vals[i] = v
	}
	s := newSession(c, c.backend, c.opts.Fullgraph)
	s.ahead = true
	defer s.end() // s failed (errAhead): tensors fn assigned get their values back
	s.newGraph(leaves, c.argTypes(leaves, vals))
	_, outs, fnErr := c.invoke(in)
	err = s.finish(outs, fnErr)
	if err == nil && s.err == nil {
		s.fail(errAhead) // fn recorded no graph; end restores as for one
	}
	if errors.Is(err, errAhead) {
		return nil
	}
	return err
}

// compileAhead is flush's compile and run of g in a Precompile's
// session: g's cache entry is made now and its executable compiled in
// the background where the backend allows it (concurrentCompiler), before
// compileAhead returns otherwise. It returns errAhead, which ends the
// session, or the error of guarding g.
func (s *session) compileAhead(g *graphTrace) error {
	c := s.c
	key := cacheKey(g)
	inputs := shapeDtypes(g.inputs)
	for _, e := range c.cache[key] {
		if _, fail := e.guards.Check(inputs); fail == nil {
			return errAhead // compiled, or being compiled
		}
	}
	if c.compiles[g.index] >= c.opts.RecompileLimit {
		return errAhead // the call decides what runs
	}
	e, err := s.newEntry(g, key, inputs)
	if err != nil {
		return err
	}
	e.ready = make(chan struct{})
	c.latest[g.index] = e
	build := func() {
		defer close(e.ready)
		defer func() {
			// A backend's panic, a bug, is the error of the call that
			// needs the graph: the background goroutine has no caller.
			if r := recover(); r != nil {
				e.exe, e.err = nil, fmt.Errorf("backend %s panicked: %v", s.backend.name, r)
			}
		}()
		e.exe, e.err = s.backendCompile(s.backend, g)
	}
	if _, ok := s.backend.b.(concurrentCompiler); ok {
		go build()
	} else {
		build()
	}
	return errAhead
}
