package logs

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestTopics(t *testing.T) {
	var buf bytes.Buffer
	prev := SetOutput(&buf)
	defer SetOutput(prev)
	defer Disable()

	Disable()
	Printf("fusion", "hidden %d", 1)
	if Enabled("fusion") || Writer("fusion") != nil || buf.Len() != 0 {
		t.Fatalf("disabled topic logged: %q", buf.String())
	}
	Enable(Parse(" fusion, ,memory")...)
	Printf("fusion", "group %d", 3)
	Printf("other", "hidden")
	Writer("memory").Write([]byte("a\nb\n"))
	want := "fusion: group 3\nmemory: a\nmemory: b\n"
	if buf.String() != want {
		t.Fatalf("got %q, want %q", buf.String(), want)
	}
	Disable()
	Enable("all")
	if !Enabled("anything") {
		t.Fatal(`"all" does not enable every topic`)
	}
}

func TestTimeStamps(t *testing.T) {
	var buf bytes.Buffer
	prev := SetOutput(&buf)
	defer SetOutput(prev)
	defer Disable()

	Disable()
	Enable("all")
	Printf("fusion", "plain")
	if buf.String() != "fusion: plain\n" {
		t.Fatalf(`"all" stamped its lines: %q`, buf.String())
	}
	buf.Reset()
	Disable()
	Enable("fusion", TimeTopic)
	Printf("fusion", "group %d", 3)
	Writer("fusion").Write([]byte("a\nb\n"))
	Printf("memory", "hidden")
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	re := regexp.MustCompile(`^ *([0-9]+\.[0-9]) ms fusion: (group 3|a|b)$`)
	if len(lines) != 3 {
		t.Fatalf("got %q, want 3 stamped fusion lines", buf.String())
	}
	for _, l := range lines {
		if !re.MatchString(l) {
			t.Errorf("line %q is not stamped as %s", l, re)
		}
	}
	if err := Check([]string{TimeTopic}); err != nil {
		t.Errorf("%s is not a known name: %v", TimeTopic, err)
	}
}

func TestCheck(t *testing.T) {
	if err := Check([]string{"fusion", "all", "graph_breaks"}); err != nil {
		t.Fatalf("known topics rejected: %v", err)
	}
	err := Check([]string{"graph_break", "bogus"})
	if err == nil {
		t.Fatal("unknown topics accepted")
	}
	for _, want := range []string{`"graph_break" (did you mean "graph_breaks"?)`, `"bogus"`, "the known topics are all, autotune,", "recompiles"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), `"bogus" (did you mean`) {
		t.Errorf("a suggestion for a word nothing resembles: %v", err)
	}
	Register("my_pass", "an out-of-tree topic")
	Register("my_pass", "twice")
	if err := Check([]string{"my_pass"}); err != nil {
		t.Errorf("a registered topic is rejected: %v", err)
	}
	n := 0
	for _, tp := range Topics() {
		if tp.Name == "my_pass" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("my_pass listed %d times", n)
	}
}

// TestTopicsAreKnown finds the topics the repository's packages log under
// (the constants passed to Printf, Enabled and Writer) and checks that
// each is listed in topics.go, so that irc --logs accepts it.
func TestTopicsAreKnown(t *testing.T) {
	call := regexp.MustCompile(`logs\.(?:Printf|Enabled|Writer)\((?:\w+\.)?(\w+)`)
	literal := regexp.MustCompile(`logs\.(?:Printf|Enabled|Writer)\("([^"]+)"`)
	var sources []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != ".." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources = append(sources, string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	idents := map[string]bool{}
	found := map[string]bool{}
	for _, src := range sources {
		for _, m := range call.FindAllStringSubmatch(src, -1) {
			idents[m[1]] = true
		}
		for _, m := range literal.FindAllStringSubmatch(src, -1) {
			found[m[1]] = true
		}
	}
	for id := range idents {
		def := regexp.MustCompile(`\b` + id + `\s*(?:string\s*)?=\s*"([^"]+)"`)
		for _, src := range sources {
			for _, m := range def.FindAllStringSubmatch(src, -1) {
				found[m[1]] = true
			}
		}
	}
	t.Logf("topics logged under: %v", found)
	if len(found) < 5 {
		t.Fatalf("found only the topics %v: the scan is broken", found)
	}
	for topic := range found {
		if err := Check([]string{topic}); err != nil {
			t.Errorf("the repository logs under %q, which logs/topics.go does not list", topic)
		}
	}
}
