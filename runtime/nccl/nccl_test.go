package nccl

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestConfigFromEnv(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string // error text, "" for none
	}{
		{map[string]string{}, ""},
		{map[string]string{EnvRank: "1", EnvWorldSize: "2", EnvAddr: "127.0.0.1:29555"}, ""},
		{map[string]string{EnvWorldSize: "0"}, "world size ($STRATA_WORLD_SIZE) must be at least 1, got 0"},
		{map[string]string{EnvRank: "2", EnvWorldSize: "2", EnvAddr: "x:1"}, "rank 2 ($STRATA_RANK) is not in a world of 2 ranks"},
		{map[string]string{EnvRank: "one"}, `$STRATA_RANK = "one" is not an integer`},
		{map[string]string{EnvWorldSize: "4"}, "4 ranks need a bootstrap"},
		{map[string]string{EnvWorldSize: "2", EnvAddr: "x:1", EnvIDFile: "/tmp/id"}, "not both"},
	}
	for _, c := range cases {
		for _, k := range []string{EnvRank, EnvWorldSize, EnvAddr, EnvIDFile} {
			t.Setenv(k, c.env[k])
		}
		_, err := ConfigFromEnv()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.env, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: %v, want an error containing %q", c.env, err, c.want)
		}
	}
}

// shareAll runs ShareID on size ranks at once and checks that they all get
// rank 0's id, made once.
func shareAll(t *testing.T, base Config, size int) {
	t.Helper()
	var made atomic.Int32
	mk := func() (UniqueID, error) {
		made.Add(1)
		var id UniqueID
		for i := range id.Internal {
			id.Internal[i] = byte(i*7 + 3)
		}
		return id, nil
	}
	ids := make([]UniqueID, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := size - 1; r >= 0; r-- { // the others start first
		c := base
		c.Rank, c.Size = r, size
		wg.Go(func() { ids[r], errs[r] = ShareID(c, mk) })
		time.Sleep(5 * time.Millisecond)
	}
	wg.Wait()
	for r := range size {
		if errs[r] != nil {
			t.Fatalf("rank %d: %v", r, errs[r])
		}
		if ids[r] != ids[0] || ids[r].Internal[5] != 38 {
			t.Errorf("rank %d got another id", r)
		}
	}
	if made.Load() != 1 {
		t.Errorf("the id was made %d times, want once (by rank 0)", made.Load())
	}
}

func TestShareIDFile(t *testing.T) {
	shareAll(t, Config{IDFile: filepath.Join(t.TempDir(), "id"), Timeout: 5 * time.Second}, 4)
}

func TestShareIDTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no localhost TCP: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	shareAll(t, Config{Addr: addr, Timeout: 5 * time.Second}, 3)
}

func TestShareIDErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		c    Config
		want string
	}{
		{Config{Rank: 1, Size: 2, IDFile: filepath.Join(dir, "never"), Timeout: 50 * time.Millisecond}, "rank 1 waited 50ms for rank 0's id"},
		{Config{Rank: 1, Size: 2, IDFile: bad, Timeout: time.Second}, "does not hold a Strata NCCL id"},
		{Config{Rank: 1, Size: 2, Addr: "127.0.0.1:1", Timeout: 100 * time.Millisecond}, "could not reach rank 0 at 127.0.0.1:1"},
		{Config{Rank: 0, Size: 0}, "must be at least 1"},
	}
	for _, c := range cases {
		_, err := ShareID(c.c, func() (UniqueID, error) { return UniqueID{}, nil })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.c, err, c.want)
		}
	}
	// A world of one rank makes its own id; a failing make is reported.
	boom := errors.New("boom")
	if _, err := ShareID(Config{Size: 1}, func() (UniqueID, error) { return UniqueID{}, boom }); !errors.Is(err, boom) {
		t.Errorf("one rank: %v, want boom", err)
	}
}

func TestSearchNotFound(t *testing.T) {
	dir := t.TempDir()
	notLib := filepath.Join(dir, "libnccl.so.2")
	if err := os.WriteFile(notLib, []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := search([]string{filepath.Join(dir, "missing.so"), notLib})
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "missing.so") {
		t.Errorf("search: %v, want ErrNotFound naming the paths", err)
	}
	e := &Error{Op: "ncclAllReduce", Code: InvalidArgument, Detail: "invalid argument"}
	if got := e.Error(); got != "ncclAllReduce: invalid argument (ncclResult 4)" {
		t.Errorf("Error() = %q", got)
	}
}
