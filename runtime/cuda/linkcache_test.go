package cuda

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLinkCachePrune fills a cache past its bounds: Prune removes what
// was not used for MaxAge, then the least recently used cubins until the
// rest fits in MaxBytes; a read marks a cubin used; a temporary file left
// by a writer that died is removed once it is an hour old.
func TestLinkCachePrune(t *testing.T) {
	dir := t.TempDir()
	c := NewLinkCache(dir)
	c.MaxBytes, c.MaxAge = 3000, 48*time.Hour
	c.puts.Store(1) // no background prune from the puts below: this test prunes itself
	now := time.Now()
	age := func(name string, d time.Duration) {
		t.Helper()
		if err := os.Chtimes(filepath.Join(dir, name), now.Add(-d), now.Add(-d)); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range []string{"a", "b", "c", "d", "e"} {
		c.put(name, make([]byte, 1000))
		age(name+".cubin", time.Duration(10-i)*time.Hour) // a oldest, e newest
	}
	c.put("ancient", make([]byte, 10))
	age("ancient.cubin", 72*time.Hour)
	for _, tmp := range []string{"x.tmp1", "y.tmp2"} {
		if err := os.WriteFile(filepath.Join(dir, tmp), []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	age("x.tmp1", 2*time.Hour)
	if _, ok := c.get("a"); !ok { // a is now the most recently used
		t.Fatal("get(a): missing")
	}
	c.Prune()
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if got, want := strings.Join(left, " "), "a.cubin d.cubin e.cubin y.tmp2"; got != want {
		t.Errorf("after Prune: %s, want %s", got, want)
	}
	// No bounds: nothing goes.
	c.MaxBytes, c.MaxAge = 0, 0
	c.Prune()
	if entries, _ := os.ReadDir(dir); len(entries) != 4 {
		t.Errorf("unbounded Prune removed files: %d left, want 4", len(entries))
	}
}

// TestLinkCachePutPrunes: the first write of a cache prunes it, in the
// background.
func TestLinkCachePutPrunes(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.cubin")
	if err := os.WriteFile(old, make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	then := time.Now().Add(-24 * time.Hour)
	os.Chtimes(old, then, then)
	c := NewLinkCache(dir)
	c.MaxBytes = 150
	c.put("new", make([]byte, 100))
	// The prune runs in the background.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := os.Stat(old)
		if os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the least recently used cubin survived the first put (%v)", err)
		}
		time.Sleep(time.Millisecond)
	}
	c.mu.Lock() // the prune is done
	c.mu.Unlock()
	if _, ok := c.get("new"); !ok {
		t.Error("the new cubin is gone")
	}
}

// TestLinkCacheHas: Has finds a cubin filed for the same device, options
// and text, and nothing else.
func TestLinkCacheHas(t *testing.T) {
	c := NewLinkCache(t.TempDir())
	dev := &Device{name: "test", ccMajor: 9}
	ptx := ".entry k {}"
	if c.Has(dev, ptx, JITOptions{}) {
		t.Fatal("an empty cache has a cubin")
	}
	c.put(c.key(dev, ptx, JITOptions{}), []byte{1, 2, 3})
	if !c.Has(dev, ptx, JITOptions{}) {
		t.Error("Has: the cubin just put is missing")
	}
	if c.Has(dev, ptx, JITOptions{OptLevel: 1}) || c.Has(dev, ptx+" ", JITOptions{}) || c.Has(&Device{name: "other"}, ptx, JITOptions{}) {
		t.Error("Has found a cubin of other options, text or device")
	}
}

// TestJITArgs checks the option arrays both JIT paths pass the driver.
func TestJITArgs(t *testing.T) {
	j := newJITArgs(JITOptions{})
	if len(j.opts) != 6 || len(j.vals) != 6 || j.opts[j.wall] != jitWallTime {
		t.Fatalf("default options %v, wall slot %d", j.opts, j.wall)
	}
	for _, o := range j.opts {
		if o == jitOptimizationLevel {
			t.Error("the default level is passed explicitly")
		}
	}
	j = newJITArgs(JITOptions{OptLevel: 2})
	if n := len(j.opts); n != 7 || j.opts[n-1] != jitOptimizationLevel || j.vals[n-1] != 1 {
		t.Errorf("OptLevel 2: options %v values %v, want level 1 last", j.opts, j.vals)
	}
	for _, level := range []int{-1, 6} {
		if checkOptLevel(JITOptions{OptLevel: level}) == nil {
			t.Errorf("OptLevel %d accepted", level)
		}
	}
	j.keepAlive()
}
