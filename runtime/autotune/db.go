package autotune

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/cache"
	"github.com/strata-ir/strata/runtime/interp"
)

// DBFile is the tuning database's file name in its directory.
const DBFile = "autotune.txt"

// dbHeader starts the file; a file with another first line is ignored
// (a future format), never misread.
const dbHeader = "# strata autotune v1: device<TAB>source<TAB>shapes<TAB>config<TAB>ms<TAB>default-ms<TAB>tried"

// Key identifies what a decision was measured for.
type Key struct {
	Device string // the GPU's name
	Source string // canonical hash of the program (cache.SourceHash)
	Shapes string // ShapesOf the arguments
}

// ShapesOf prints the element types and shapes of args, e.g.
// "f32[64,1024] index[]".
func ShapesOf(args []interp.Value) string {
	parts := make([]string, len(args))
	for i, a := range args {
		dims := make([]string, len(a.Shape()))
		for j, d := range a.Shape() {
			dims[j] = strconv.FormatInt(d, 10)
		}
		parts[i] = fmt.Sprintf("%v[%s]", a.ElemType(), strings.Join(dims, ","))
	}
	return strings.Join(parts, " ")
}

// Decision is the outcome of a search.
type Decision struct {
	Config    togpu.Config
	MS        float64 // median milliseconds of one call with Config
	DefaultMS float64 // the same for togpu.DefaultConfig
	Tried     int     // candidates measured
}

// DB is the text tuning database: one decision per line, appended; on
// reading, the last line of a key wins. It is safe for concurrent use.
type DB struct {
	path string

	mu      sync.Mutex
	entries map[Key]Decision
}

// OpenDB opens the database in dir ("" is the compile cache's directory,
// cache.Dir), creating the directory when needed.
func OpenDB(dir string) (*DB, error) {
	if dir == "" {
		var err error
		if dir, err = cache.Dir(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("autotune: %w", err)
	}
	db := &DB{path: filepath.Join(dir, DBFile), entries: map[Key]Decision{}}
	if err := db.load(); err != nil {
		return nil, err
	}
	return db, nil
}

// Path returns the database's file.
func (db *DB) Path() string { return db.path }

// load reads the file; malformed lines are skipped (a torn write loses
// one decision, which is then measured again).
func (db *DB) load() error {
	f, err := os.Open(db.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("autotune: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() || sc.Text() != dbHeader {
		return nil
	}
	for sc.Scan() {
		if k, d, ok := parseLine(sc.Text()); ok {
			db.entries[k] = d
		}
	}
	return sc.Err()
}

func parseLine(line string) (Key, Decision, bool) {
	f := strings.Split(line, "\t")
	if len(f) != 7 {
		return Key{}, Decision{}, false
	}
	cfg, err := ParseConfig(f[3])
	if err != nil {
		return Key{}, Decision{}, false
	}
	ms, err1 := strconv.ParseFloat(f[4], 64)
	def, err2 := strconv.ParseFloat(f[5], 64)
	tried, err3 := strconv.Atoi(f[6])
	if err1 != nil || err2 != nil || err3 != nil {
		return Key{}, Decision{}, false
	}
	return Key{Device: f[0], Source: f[1], Shapes: f[2]}, Decision{Config: cfg, MS: ms, DefaultMS: def, Tried: tried}, true
}

func formatLine(k Key, d Decision) string {
	return strings.Join([]string{k.Device, k.Source, k.Shapes, ConfigString(d.Config),
		strconv.FormatFloat(d.MS, 'g', 6, 64), strconv.FormatFloat(d.DefaultMS, 'g', 6, 64), strconv.Itoa(d.Tried)}, "\t")
}

// Lookup returns the decision stored for k.
func (db *DB) Lookup(k Key) (Decision, bool) {
	db.mu.Lock()
	defer db.mu.Unlock()
	d, ok := db.entries[k]
	return d, ok
}

// Store records d for k and appends it to the file.
func (db *DB) Store(k Key, d Decision) error {
	for _, s := range []string{k.Device, k.Source, k.Shapes} {
		if strings.ContainsAny(s, "\t\n") {
			return fmt.Errorf("autotune: key field %q holds a tab or newline", s)
		}
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	db.entries[k] = d
	f, err := os.OpenFile(db.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("autotune: %w", err)
	}
	line := formatLine(k, d) + "\n"
	if st, err := f.Stat(); err == nil && st.Size() == 0 {
		line = dbHeader + "\n" + line
	}
	_, err = f.WriteString(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("autotune: %w", err)
	}
	return nil
}
