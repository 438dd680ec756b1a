package tutorials

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A tutorial shows each file of its module as a line "File `PATH`:", a
// blank line and a fenced block holding the whole file.
var fileBlock = regexp.MustCompile("(?m)^File `([^`]+)`:\n\n```[a-z]*\n((?s:.*?))^```\n")

// tutorialFiles returns the files a tutorial shows, by path.
func tutorialFiles(t *testing.T, page string) (map[string]string, string) {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, m := range fileBlock.FindAllStringSubmatch(string(b), -1) {
		if _, dup := files[m[1]]; dup {
			t.Fatalf("%s shows %s twice", page, m[1])
		}
		files[m[1]] = m[2]
	}
	return files, string(b)
}

// module writes files into a fresh directory outside the repository, with
// go.mod's replace pointed at this checkout and the checkout's go.sum, so
// that it builds offline from the module cache; it returns the directory
// and the go command's environment.
func module(t *testing.T, files map[string]string) (string, []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a separate module")
	}
	if _, err := exec.LookPath("go"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the go command is required under CI=true")
		}
		t.Skip("go command not found")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if strings.HasPrefix(dir, root+string(filepath.Separator)) {
		t.Fatalf("the temporary directory %s is inside the repository", dir)
	}
	gomod, ok := files["go.mod"]
	const replace = "replace github.com/strata-ir/strata => ../strata\n"
	if !ok || !strings.Contains(gomod, replace) {
		t.Fatalf("the tutorial's go.mod lacks %q:\n%s", replace, gomod)
	}
	files["go.mod"] = strings.Replace(gomod, "../strata", root, 1)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files["go.sum"] = string(sum)
	for path, text := range files {
		full := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
	// The tutorial's step: go mod tidy. Offline it needs every module
	// Strata's tests use in the module cache; where one is missing (a
	// fresh cache without network), the copied go.sum is enough to build.
	if out, err := goCmd(dir, env, "mod", "tidy"); err != nil {
		if !strings.Contains(out, "module lookup disabled") {
			t.Fatalf("go mod tidy: %v\n%s", err, out)
		}
		t.Logf("go mod tidy needs the network here; building with the checkout's go.sum:\n%s", out)
	}
	return dir, env
}

// goCmd runs the go command in dir and returns its combined output.
func goCmd(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// transcript returns the commands "$ ./irc ..." of a page's transcripts
// and the output shown under each.
func transcript(page string) (cmds, outputs []string) {
	var cur *strings.Builder
	flush := func() {
		if cur != nil {
			outputs = append(outputs, cur.String())
			cur = nil
		}
	}
	for _, line := range strings.Split(page, "\n") {
		switch {
		case strings.HasPrefix(line, "$ ./"):
			flush()
			cmds = append(cmds, strings.TrimPrefix(line, "$ "))
			cur = &strings.Builder{}
		case strings.HasPrefix(line, "$ ") || strings.HasPrefix(line, "```"):
			flush()
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	flush()
	return cmds, outputs
}

// TestCustomPassTutorial builds docs/tutorials/custom-pass.md's module
// outside the repository, runs its rapid test, builds its irc and runs
// every command the page shows, comparing the output with the page's. The
// page's files are also those of examples/custompass.
func TestCustomPassTutorial(t *testing.T) {
	t.Parallel()
	files, page := tutorialFiles(t, "custom-pass.md")
	want := []string{"go.mod", "strengthreduce/strengthreduce.go", "strengthreduce/strengthreduce_test.go", "cmd/irc/main.go", "testdata/mul.mlir"}
	for _, path := range want {
		if _, ok := files[path]; !ok {
			t.Fatalf("custom-pass.md does not show %s (it shows %d files)", path, len(files))
		}
		if path == "go.mod" {
			continue // examples/custompass replaces strata with ../..
		}
		example, err := os.ReadFile(filepath.Join("../../examples/custompass", path))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(example), files[path]); diff != "" {
			t.Errorf("custom-pass.md's %s differs from examples/custompass/%s (-example +tutorial):\n%s", path, path, diff)
		}
	}
	dir, env := module(t, files)
	// examples/custompass, a module of its own inside the repository, is
	// complete as it is: its go.mod and go.sum need no change.
	list := exec.Command("go", "list", "-deps", "-test", "./...")
	list.Dir = "../../examples/custompass"
	list.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly", "GOPROXY=off")
	var stderr bytes.Buffer
	list.Stderr = &stderr
	if err := list.Run(); err != nil {
		t.Errorf("examples/custompass: go list -mod=readonly: %v (run go mod tidy there)\n%s", err, stderr.String())
	}
	if out, err := goCmd(dir, env, "test", "./..."); err != nil {
		t.Fatalf("go test: %v\n%s", err, out)
	}
	if out, err := goCmd(dir, env, "build", "-o", "irc", "./cmd/irc"); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmds, outputs := transcript(page)
	if len(cmds) < 4 {
		t.Fatalf("found %d irc commands in custom-pass.md", len(cmds))
	}
	for i, c := range cmds {
		var out bytes.Buffer
		cmd := exec.Command("bash", "-c", c)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &out
		var exit *exec.ExitError
		if err := cmd.Run(); err != nil && !errors.As(err, &exit) {
			t.Fatalf("%s: %v", c, err)
		}
		if diff := cmp.Diff(outputs[i], out.String()); diff != "" {
			t.Errorf("$ %s\nprints other than custom-pass.md shows (-page +actual):\n%s", c, diff)
		}
	}
}

// TestPropertyTestingTutorial builds docs/tutorials/property-testing.md's
// module outside the repository and runs its test, then breaks the pass as
// the page suggests and checks that the test fails with a shrunk program.
func TestPropertyTestingTutorial(t *testing.T) {
	t.Parallel()
	files, _ := tutorialFiles(t, "property-testing.md")
	for _, path := range []string{"go.mod", "subtoadd/subtoadd.go", "subtoadd/subtoadd_test.go"} {
		if _, ok := files[path]; !ok {
			t.Fatalf("property-testing.md does not show %s (it shows %d files)", path, len(files))
		}
	}
	pass := files["subtoadd/subtoadd.go"]
	dir, env := module(t, files)
	if out, err := goCmd(dir, env, "test", "./..."); err != nil {
		t.Fatalf("go test: %v\n%s", err, out)
	}
	const right, wrong = "[]*ir.Value{a, neg}", "[]*ir.Value{a, b}"
	if !strings.Contains(pass, right) {
		t.Fatalf("subtoadd.go no longer builds the addition as %s", right)
	}
	broken := strings.Replace(pass, right, wrong, 1)
	if err := os.WriteFile(filepath.Join(dir, "subtoadd/subtoadd.go"), []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := goCmd(dir, env, "test", "./...")
	if err == nil || !strings.Contains(out, "[rapid] failed after") || !strings.Contains(out, `"graph.sub"`) {
		t.Errorf("the broken pass: go test did not fail with a shrunk program (err %v):\n%s", err, out)
	}
}
