package passes

import (
	"errors"
	"strings"
	"testing"
)

func TestPipelineRoundTrip(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "builtin.module()"},
		{"builtin.module()", "builtin.module()"},
		{"test-tag", "builtin.module(test-tag)"},
		{"builtin.module(test-tag)", "builtin.module(test-tag)"},
		{" builtin.module( test.func( test-tag , test-fail ) , test-tag ) ", "builtin.module(test.func(test-tag,test-fail),test-tag)"},
		{"test.func(test-options)", `builtin.module(test.func(test-options{count=3 flag=false label="" mode=fast}))`},
		{"test.func(test-options{flag count=7 mode=slow dims=1,2,3 names=a,\"b c\" label='x y'})",
			`builtin.module(test.func(test-options{count=7 dims=1,2,3 flag=true label="x y" mode=slow names=a,"b c"}))`},
		{"test.func(test-options{label={a(b,c)}})", `builtin.module(test.func(test-options{count=3 flag=false label="a(b,c)" mode=fast}))`},
		{"test-pipeline", "builtin.module(test.func(test-tag,test-tag))"},
		{"any(test-tag)", "any(test-tag)"},
		{"builtin.module(test.inner(test.func(test-tag)))", "builtin.module(test.inner(test.func(test-tag)))"},
	}
	for _, tt := range tests {
		pm, err := ParsePipeline(tt.in)
		if err != nil {
			t.Errorf("ParsePipeline(%q): %v", tt.in, err)
			continue
		}
		got := pm.String()
		if got != tt.want {
			t.Errorf("ParsePipeline(%q).String() = %q, want %q", tt.in, got, tt.want)
		}
		again, err := ParsePipeline(got)
		if err != nil {
			t.Errorf("reparsing %q: %v", got, err)
			continue
		}
		if again.String() != got {
			t.Errorf("round trip of %q gave %q", got, again.String())
		}
	}
}

func TestPipelineErrors(t *testing.T) {
	tests := []struct {
		in     string
		offset int
		msg    string
	}{
		{"builtin.module(test-tga)", 15, "'test-tga' does not refer to a registered pass or pass pipeline; did you mean 'test-tag'?"},
		{"builtin.module(test-tag", 14, "unbalanced '(': expected ')' to close the 'builtin.module' pipeline"},
		{"test-tag)", 8, "unbalanced ')'"},
		{"builtin.module(test-tag))", 24, "unexpected ')'"},
		{"test.func(test-options{flag", 22, "unbalanced '{'"},
		{"test.func(test-options{cuont=1})", 23, "pass 'test-options' has no option 'cuont'; did you mean 'count'?"},
		{"test.func(test-options{count=x})", 29, "bad value for option 'count' of pass 'test-options': expected an integer"},
		{"test.func(test-options{flag=maybe})", 28, "expected true or false"},
		{"test.func(test-options{mode=medium})", 28, `"medium" is not one of fast, slow`},
		{"test.func(test-options{count})", 23, "needs a value (int)"},
		{"test.func(test-options{count=-1})", 10, "count must not be negative"},
		{"test.func(test-options{label=\"x})", 22, "unterminated quoted option value"},
		{"builtin.module(test-fail)", 15, "can't add pass 'test-fail' restricted to 'test.func' on a PassManager intended to run on 'builtin.module', did you intend to nest?"},
		{"test-fail", 0, "restricted to 'test.func'"},
		{"test.func(test-module-only)", 10, "restricted to 'builtin.module' on a PassManager intended to run on 'test.func'"},
		{"test-wrong-anchor", 0, "restricted to 'test.func'"},
		{"test-loop-a", 0, "refers to itself"},
		{"test-tag,,test-tag", 9, "expected a pass or pipeline name, found ','"},
		{"test-tag,", 9, "found the end of the pipeline"},
		{"test-pipeline{x=1}", 14, "pipeline 'test-pipeline' takes no options"},
	}
	for _, tt := range tests {
		_, err := ParsePipeline(tt.in)
		var pe *PipelineError
		if !errors.As(err, &pe) {
			t.Errorf("ParsePipeline(%q) = %v, want a *PipelineError", tt.in, err)
			continue
		}
		if pe.Offset != tt.offset || !strings.Contains(pe.Msg, tt.msg) {
			t.Errorf("ParsePipeline(%q): offset %d, %q; want offset %d, %q", tt.in, pe.Offset, pe.Msg, tt.offset, tt.msg)
		}
		lines := strings.Split(pe.Error(), "\n")
		if len(lines) != 3 || lines[1] != tt.in || len(lines[2]) != tt.offset+1 || !strings.HasSuffix(lines[2], "^") {
			t.Errorf("ParsePipeline(%q) error has no caret under offset %d:\n%s", tt.in, tt.offset, pe.Error())
		}
	}
}

func TestListPasses(t *testing.T) {
	var b strings.Builder
	if err := ListPasses(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  test-options  -  Records its options (on test.func)\n",
		"    count=<int> (default 3)  -  a count\n",
		"    mode=<fast|slow> (default fast)  -  a mode\n",
		"    dims=<list<int>>  -  some dims\n",
		"  test-pipeline  -  Tags functions twice\n    = test.func(test-tag,test-tag)\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("ListPasses output lacks %q:\n%s", want, b.String())
		}
	}
	all := All()
	for i := 1; i < len(all); i++ {
		if all[i-1].Name >= all[i].Name {
			t.Errorf("All() not sorted: %s before %s", all[i-1].Name, all[i].Name)
		}
	}
}

func TestAddProgrammatic(t *testing.T) {
	pm := NewPassManager("builtin.module")
	fn := pm.Nest("test.func")
	if err := fn.Add("test-options", Options{"count": 5, "dims": []int64{1}}); err != nil {
		t.Fatal(err)
	}
	if err := fn.Add("test-options", Options{"bogus": 1}); err == nil {
		t.Error("Add accepted an unknown option")
	}
	if err := fn.Add("test-options", Options{"count": "five"}); err == nil {
		t.Error("Add accepted an ill-typed option")
	}
	if err := pm.Add("test-fail", nil); err == nil {
		t.Error("Add accepted a test.func pass on builtin.module")
	}
	want := `builtin.module(test.func(test-options{count=5 dims=1 flag=false label="" mode=fast}))`
	if got := pm.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
