package dynlib

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-ir/strata/logs"
)

// TestResolve checks that a soname resolves to the first directory of
// $LD_LIBRARY_PATH holding it, that a path with a slash is kept, and that
// a name no directory holds resolves to "".
func TestResolve(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, p := range []string{filepath.Join(b, "libx.so.1"), filepath.Join(a, "liby.so.2"), filepath.Join(b, "liby.so.2")} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("LD_LIBRARY_PATH", a+string(filepath.ListSeparator)+b)
	for _, c := range []struct{ name, want string }{
		{"libx.so.1", filepath.Join(b, "libx.so.1")},
		{"liby.so.2", filepath.Join(a, "liby.so.2")},
		{"libstrata-none.so.7", ""},
		{"./rel/libz.so", "./rel/libz.so"},
	} {
		if got := Resolve(c.name); got != c.want {
			t.Errorf("Resolve(%q) = %q, want %q", c.name, got, c.want)
		}
	}
	if got, want := FirstFile([]string{"/no/such/libq.so", "libstrata-none.so.7", "liby.so.2", "libx.so.1"}), filepath.Join(a, "liby.so.2"); got != want {
		t.Errorf("FirstFile = %q, want %q", got, want)
	}
	if got := FirstFile([]string{"/no/such/libq.so", "libstrata-none.so.7"}); got != "" {
		t.Errorf("FirstFile of missing files = %q, want \"\"", got)
	}
}

// TestReadConf checks an ld.so.conf with comments, a hwcap line and an
// include glob.
func TestReadConf(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "conf.d")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(sub, "a.conf"), "# cuda\n/usr/local/cuda/lib64\n")
	write(filepath.Join(sub, "b.conf"), "/opt/b/lib # trailing\n")
	write(filepath.Join(dir, "ld.so.conf"), "/first\nhwcap 0 nosegneg\ninclude conf.d/*.conf\n\n/last\n")
	got := strings.Join(readConf(filepath.Join(dir, "ld.so.conf"), 0), " ")
	if want := "/first /usr/local/cuda/lib64 /opt/b/lib /last"; got != want {
		t.Errorf("readConf = %q, want %q", got, want)
	}
}

// TestPrefetch checks that Prefetch reads an existing file once (logged),
// skips what is missing (logged) and does nothing when turned off.
func TestPrefetch(t *testing.T) {
	buf := &syncWriter{b: &bytes.Buffer{}}
	old := logs.SetOutput(buf)
	defer logs.SetOutput(old)
	logs.Enable("compile")
	defer logs.Disable()
	dir := t.TempDir()
	f := filepath.Join(dir, "lib.so")
	if err := os.WriteFile(f, make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvPrefetch, "off")
	Prefetch(filepath.Join(dir, "off.so"))
	t.Setenv(EnvPrefetch, "")
	Prefetch(f, f, filepath.Join(dir, "missing.so"), "")
	Prefetch(f)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		out := buf.String()
		if strings.Count(out, "\n") >= 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	out := buf.String()
	if n := strings.Count(out, "prefetch of "+f+" (3 MB)"); n != 1 {
		t.Errorf("%d prefetches of the file logged, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "missing.so") || strings.Contains(out, "off.so") {
		t.Errorf("want the missing file's failure logged and nothing while off:\n%s", out)
	}
}

// syncWriter is a buffer the test reads while the log writes to it.
type syncWriter struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
