package passes

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// PassInfo describes a registered pass: how it is named and documented, the
// op it runs on, its options and how to build it.
type PassInfo struct {
	// Name is the pipeline name, such as "canonicalize".
	Name string
	// Summary is one line; Description may be longer (Markdown).
	Summary, Description string
	// Anchor is the op name the pass runs on ("builtin.module", "func.func",
	// ...) or AnyOp for passes that run on any op.
	Anchor string
	// Options lists the pass's options, as written inside {...}.
	Options []OptionDef
	// New builds the pass from a complete set of option values (every option
	// present, defaults filled in). It may reject inconsistent values.
	New func(opts Options) (Pass, error)
	// After lists the passes that, when a pipeline also names them, must
	// run before this one; Before those that must run after it. Each says
	// why. A textual pipeline that breaks one is rejected when parsed.
	After, Before []Order
}

// AnyOp is the anchor of passes and nested pipelines that run on any op.
const AnyOp = "any"

// OptionType is the type of a pass option's value.
type OptionType int

// The option types. Lists are written comma separated: {wrt=0,1}.
const (
	Bool OptionType = iota
	Int
	String
	IntList
	StringList
)

var optionTypeNames = [...]string{"bool", "int", "string", "list<int>", "list<string>"}

// String returns the type as --list-passes shows it.
func (t OptionType) String() string {
	if t < 0 || int(t) >= len(optionTypeNames) {
		return "OptionType(" + strconv.Itoa(int(t)) + ")"
	}
	return optionTypeNames[t]
}

// OptionDef declares one pass option.
type OptionDef struct {
	Name string
	Type OptionType
	// Default is a bool, int64, string, []int64 or []string matching Type
	// (int is accepted for Int and converted).
	Default any
	// Enum, when set, lists the allowed values of a String option.
	Enum []string
	Doc  string
}

// Options holds the value of every option of one pass instance, keyed by
// option name. Values have the Go types listed in OptionDef.Default.
type Options map[string]any

// Bool returns the bool option name (false if absent).
func (o Options) Bool(name string) bool { v, _ := o[name].(bool); return v }

// Int returns the int option name (0 if absent).
func (o Options) Int(name string) int64 { v, _ := o[name].(int64); return v }

// String returns the string option name ("" if absent).
func (o Options) String(name string) string { v, _ := o[name].(string); return v }

// Ints returns the integer-list option name.
func (o Options) Ints(name string) []int64 { v, _ := o[name].([]int64); return v }

// Strings returns the string-list option name.
func (o Options) Strings(name string) []string { v, _ := o[name].([]string); return v }

// Pipeline is a registered named pipeline, usable by name inside a pipeline.
type Pipeline struct {
	Name, Summary string
	// Text is the pipeline it expands to, in pipeline syntax, without an
	// anchor: it is spliced into the pipeline that names it.
	Text string
}

var registry = struct {
	sync.RWMutex
	passes    map[string]*PassInfo
	pipelines map[string]*Pipeline
}{passes: map[string]*PassInfo{}, pipelines: map[string]*Pipeline{}}

// Register adds a pass to the registry. It panics on a programming error
// (empty or duplicate name, a default of the wrong type), as registration
// happens in init functions where that is the only useful report.
func Register(info *PassInfo) {
	if err := checkInfo(info); err != nil {
		panic("passes.Register: " + err.Error())
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.passes[info.Name]; dup {
		panic("passes.Register: duplicate pass " + strconv.Quote(info.Name))
	}
	if _, dup := registry.pipelines[info.Name]; dup {
		panic("passes.Register: " + strconv.Quote(info.Name) + " is already a pipeline")
	}
	registry.passes[info.Name] = info
}

func checkInfo(info *PassInfo) error {
	if info.Name == "" || !isIdent(info.Name) {
		return fmt.Errorf("bad pass name %q", info.Name)
	}
	if info.New == nil {
		return fmt.Errorf("pass %q has no constructor", info.Name)
	}
	if info.Anchor == "" {
		return fmt.Errorf("pass %q has no anchor", info.Name)
	}
	for i := range info.Options {
		od := &info.Options[i]
		if d, ok := od.Default.(int); ok {
			od.Default = int64(d)
		}
		d, err := od.check(od.Default)
		if err != nil {
			return fmt.Errorf("pass %q option %q: default: %w", info.Name, od.Name, err)
		}
		od.Default = d
	}
	return nil
}

// RegisterPipeline registers a named pipeline. text is checked when the
// pipeline is used, so pipelines may name passes registered later.
func RegisterPipeline(name, summary, text string) {
	if !isIdent(name) {
		panic("passes.RegisterPipeline: bad name " + strconv.Quote(name))
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.passes[name]; dup {
		panic("passes.RegisterPipeline: " + strconv.Quote(name) + " is already a pass")
	}
	if _, dup := registry.pipelines[name]; dup {
		panic("passes.RegisterPipeline: duplicate pipeline " + strconv.Quote(name))
	}
	registry.pipelines[name] = &Pipeline{Name: name, Summary: summary, Text: text}
}

// Lookup returns the pass registered as name, or nil.
func Lookup(name string) *PassInfo {
	registry.RLock()
	defer registry.RUnlock()
	return registry.passes[name]
}

// LookupPipeline returns the pipeline registered as name, or nil.
func LookupPipeline(name string) *Pipeline {
	registry.RLock()
	defer registry.RUnlock()
	return registry.pipelines[name]
}

// All returns the registered passes sorted by name.
func All() []*PassInfo {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]*PassInfo, 0, len(registry.passes))
	for _, p := range registry.passes {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Pipelines returns the registered pipelines sorted by name.
func Pipelines() []*Pipeline {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]*Pipeline, 0, len(registry.pipelines))
	for _, p := range registry.pipelines {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ListPasses writes every registered pass with its summary, anchor and
// options, then the named pipelines, as irc --list-passes shows them.
func ListPasses(w io.Writer) error {
	var b strings.Builder
	b.WriteString("Passes:\n")
	for _, p := range All() {
		fmt.Fprintf(&b, "  %s  -  %s", p.Name, p.Summary)
		if p.Anchor != AnyOp {
			fmt.Fprintf(&b, " (on %s)", p.Anchor)
		}
		b.WriteByte('\n')
		for _, od := range p.Options {
			fmt.Fprintf(&b, "    %s=<%s>", od.Name, od.typeString())
			if d := formatValue(od.Default); d != "" {
				fmt.Fprintf(&b, " (default %s)", d)
			}
			if od.Doc != "" {
				fmt.Fprintf(&b, "  -  %s", od.Doc)
			}
			b.WriteByte('\n')
		}
	}
	if ps := Pipelines(); len(ps) > 0 {
		b.WriteString("Pipelines:\n")
		for _, p := range ps {
			fmt.Fprintf(&b, "  %s  -  %s\n    = %s\n", p.Name, p.Summary, p.Text)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (od *OptionDef) typeString() string {
	if len(od.Enum) > 0 {
		return strings.Join(od.Enum, "|")
	}
	return od.Type.String()
}

// names returns every registered pass and pipeline name, for suggestions.
func registeredNames() []string {
	registry.RLock()
	defer registry.RUnlock()
	var out []string
	for n := range registry.passes {
		out = append(out, n)
	}
	for n := range registry.pipelines {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// check validates a value of od's type, returning it normalised.
func (od *OptionDef) check(v any) (any, error) {
	switch od.Type {
	case Bool:
		if _, ok := v.(bool); ok {
			return v, nil
		}
	case Int:
		if _, ok := v.(int64); ok {
			return v, nil
		}
	case String:
		if s, ok := v.(string); ok {
			if len(od.Enum) > 0 && !slices.Contains(od.Enum, s) {
				return nil, fmt.Errorf("%q is not one of %s", s, strings.Join(od.Enum, ", "))
			}
			return v, nil
		}
	case IntList:
		if v == nil {
			return []int64(nil), nil
		}
		if _, ok := v.([]int64); ok {
			return v, nil
		}
	case StringList:
		if v == nil {
			return []string(nil), nil
		}
		if _, ok := v.([]string); ok {
			return v, nil
		}
	}
	return nil, fmt.Errorf("value %v (%T) is not a %s", v, v, od.Type)
}

// parseValue reads the text of an option value.
func (od *OptionDef) parseValue(text string) (any, error) {
	switch od.Type {
	case Bool:
		switch text {
		case "true", "1", "":
			return true, nil
		case "false", "0":
			return false, nil
		}
		return nil, fmt.Errorf("expected true or false, got %q", text)
	case Int:
		n, err := strconv.ParseInt(text, 0, 64)
		if err != nil {
			return nil, fmt.Errorf("expected an integer, got %q", text)
		}
		return n, nil
	case String:
		return od.check(text)
	case IntList:
		var out []int64
		for _, s := range splitList(text) {
			n, err := strconv.ParseInt(s, 0, 64)
			if err != nil {
				return nil, fmt.Errorf("expected a list of integers, got %q", text)
			}
			out = append(out, n)
		}
		return out, nil
	case StringList:
		return splitList(text), nil
	}
	return nil, fmt.Errorf("unknown option type %v", od.Type)
}

// splitList splits a comma-separated list, respecting quotes and braces.
func splitList(text string) []string {
	if text == "" {
		return nil
	}
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '{' || c == '(' || c == '[':
			depth++
		case c == '}' || c == ')' || c == ']':
			depth--
		case c == ',' && depth == 0:
			out = append(out, unquote(text[start:i]))
			start = i + 1
		}
	}
	return append(out, unquote(text[start:]))
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	if len(s) >= 2 && s[0] == '{' && s[len(s)-1] == '}' {
		return s[1 : len(s)-1]
	}
	return s
}

// formatValue prints an option value as the pipeline syntax reads it back.
func formatValue(v any) string {
	switch v := v.(type) {
	case bool:
		return strconv.FormatBool(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		return quoteIfNeeded(v)
	case []int64:
		parts := make([]string, len(v))
		for i, n := range v {
			parts[i] = strconv.FormatInt(n, 10)
		}
		return strings.Join(parts, ",")
	case []string:
		parts := make([]string, len(v))
		for i, s := range v {
			parts[i] = quoteIfNeeded(s)
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}

// quoteIfNeeded braces a string value that holds pipeline punctuation, as
// MLIR does for nested pipelines in options ({canonicalize,cse}).
func quoteIfNeeded(s string) string {
	if s == "" {
		return `""`
	}
	if strings.ContainsAny(s, " ,{}()=\"'") {
		if !strings.Contains(s, `"`) {
			return `"` + s + `"`
		}
		return "{" + s + "}"
	}
	return s
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i]) {
			return false
		}
	}
	return true
}

func isIdentByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '$'
}
