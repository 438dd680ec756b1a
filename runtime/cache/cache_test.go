package cache

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
)

func key(src string) Key {
	return Key{Source: src, Pipeline: "lower-to-gpu", Target: "native sm_90 7.8", Compiler: "test"}
}

func TestPutGet(t *testing.T) {
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k := key("a")
	if _, ok, err := c.Get(k); ok || err != nil {
		t.Fatalf("hit in an empty cache: %v %v", ok, err)
	}
	e := &Entry{PTX: map[string]string{"k": ".version 7.8"}, Plan: "module {}"}
	if err := c.Put("f.mlir", k, e); err != nil {
		t.Fatal(err)
	}
	got, ok, err := c.Get(k)
	if !ok || err != nil || got.PTX["k"] != ".version 7.8" || got.Plan != "module {}" {
		t.Fatalf("Get = %+v, %v, %v", got, ok, err)
	}
	// Every part of the key matters.
	for _, other := range []Key{key("b"), {Source: "a", Pipeline: "x", Target: k.Target, Compiler: k.Compiler},
		{Source: "a", Pipeline: k.Pipeline, Target: "llc", Compiler: k.Compiler}, {Source: "a", Pipeline: k.Pipeline, Target: k.Target, Compiler: "v2"}} {
		if other.Sum() == k.Sum() {
			t.Errorf("%+v and %+v share a sum", other, k)
		}
		if _, ok, _ := c.Get(other); ok {
			t.Errorf("hit for %+v", other)
		}
	}
	// Moving text between parts changes the sum.
	if (Key{Source: "ab", Pipeline: "c"}).Sum() == (Key{Source: "a", Pipeline: "bc"}).Sum() {
		t.Error("parts are not delimited")
	}
}

func TestCorruptEntry(t *testing.T) {
	c, _ := Open(t.TempDir())
	k := key("a")
	if err := os.WriteFile(c.entryPath(k), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Get(k); ok || err == nil || !strings.Contains(err.Error(), "corrupt entry") {
		t.Fatalf("corrupt entry: ok %v err %v", ok, err)
	}
}

func TestExplain(t *testing.T) {
	c, _ := Open(t.TempDir())
	if got := c.Explain("f.mlir", key("a")); !strings.Contains(got, "never compiled") {
		t.Errorf("first miss: %s", got)
	}
	k := key(strings.Repeat("a", 64))
	if err := c.Put("f.mlir", k, &Entry{}); err != nil {
		t.Fatal(err)
	}
	k2 := k
	k2.Source, k2.Target = strings.Repeat("b", 64), "llc sm_80 7.8"
	got := c.Explain("f.mlir", k2)
	for _, want := range []string{"the source IR changed (was aaaaaaaaaaaa, now bbbbbbbbbbbb)", `the target changed (was "native sm_90 7.8", now "llc sm_80 7.8")`} {
		if !strings.Contains(got, want) {
			t.Errorf("Explain = %s, want %q", got, want)
		}
	}
	if strings.Contains(got, "pipeline") || strings.Contains(got, "compiler") {
		t.Errorf("Explain names unchanged parts: %s", got)
	}
	os.Remove(c.entryPath(k))
	if got := c.Explain("f.mlir", k); !strings.Contains(got, "entry is gone") {
		t.Errorf("evicted: %s", got)
	}
}

// TestConcurrentPut writes the same and different entries from many
// goroutines: every read sees a whole entry and no temporary file stays.
func TestConcurrentPut(t *testing.T) {
	dir := t.TempDir()
	c, _ := Open(dir)
	big := strings.Repeat("x", 1<<20)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := key(string(rune('a' + i%4)))
			if err := c.Put("f", k, &Entry{Plan: big}); err != nil {
				t.Error(err)
			}
			if e, ok, err := c.Get(k); !ok || err != nil || e.Plan != big {
				t.Errorf("read a partial entry: %v %v", ok, err)
			}
		}()
	}
	wg.Wait()
	for _, sub := range []string{".", "entries"} {
		tmps, _ := filepath.Glob(filepath.Join(dir, sub, ".tmp-*"))
		if len(tmps) > 0 {
			t.Errorf("temporary files left: %v", tmps)
		}
	}
}

func TestSourceHash(t *testing.T) {
	parse := func(src string) *ir.Operation {
		m, err := ir.Parse(dialects.NewContext(), src, ir.ParseOptions{Filename: "x.mlir"})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a := parse("func.func @f(%x: f32) -> f32 {\n  %y = arith.addf %x, %x : f32\n  return %y : f32\n}")
	b := parse("// comment\nfunc.func @f(%arg: f32) -> f32 {\n      %sum = arith.addf %arg, %arg : f32\n  return %sum : f32 }")
	c := parse("func.func @f(%x: f32) -> f32 {\n  %y = arith.mulf %x, %x : f32\n  return %y : f32\n}")
	if SourceHash(a) != SourceHash(b) {
		t.Error("names, comments or layout changed the hash")
	}
	if SourceHash(a) == SourceHash(c) {
		t.Error("a different op kept the hash")
	}
}

func TestDir(t *testing.T) {
	t.Setenv(EnvDir, "/some/where")
	if d, err := Dir(); err != nil || d != "/some/where" {
		t.Errorf("Dir = %q, %v", d, err)
	}
	if CompilerVersion() == "" {
		t.Error("empty compiler version")
	}
}
