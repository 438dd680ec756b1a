package ircmain

func (t *tool) run(args []string) int { return t.errorf("run: the interpreter is not built yet") }
