package cuda

import (
	"fmt"
	"strings"
)

// PTXKernel is one kernel of a PTX module cut out as a module of its own
// (SplitPTX).
type PTXKernel struct {
	// Name is the kernel's .entry name.
	Name string
	// PTX is a complete module: the original's header, the shared-memory
	// declarations the kernel names, and the kernel.
	PTX string
}

// SplitPTX cuts a PTX module into one module per kernel, so that the
// driver can compile the kernels on several threads at once (LoadModules):
// its JIT compiles a module's kernels one after another. It splits only
// modules whose top level holds nothing but the header (.version, .target,
// .address_size), comments, shared-memory declarations and .entry
// kernels, which is what both PTX backends emit for a gpu.module; shared
// memory is allocated per block, so a declaration copied into each kernel
// that names it means what it meant in the whole module. For anything else
// (.func, .global, .const, another directive) it returns ok false with the
// reason, and the module is to be loaded whole.
func SplitPTX(ptx string) (kernels []PTXKernel, ok bool, why string) {
	var header []string
	type decl struct{ name, text string }
	var shared []decl
	type entry struct {
		name  string
		lines []string
	}
	var entries []entry
	var cur *entry
	depth, opened := 0, false
	for i, line := range strings.Split(ptx, "\n") {
		code := line
		if j := strings.Index(code, "//"); j >= 0 {
			code = code[:j]
		}
		trimmed := strings.TrimSpace(code)
		if cur == nil {
			switch {
			case trimmed == "":
				continue // blank lines and comments between kernels
			case hasDirective(trimmed, ".version", ".target", ".address_size"):
				header = append(header, trimmed)
				continue
			case hasDirective(trimmed, ".shared") || strings.HasPrefix(trimmed, ".extern") && hasDirective(strings.TrimSpace(strings.TrimPrefix(trimmed, ".extern")), ".shared"):
				name := declName(trimmed)
				if name == "" || !strings.HasSuffix(trimmed, ";") {
					return nil, false, fmt.Sprintf("line %d: a shared declaration not on one line", i+1)
				}
				shared = append(shared, decl{name, trimmed})
				continue
			case strings.Contains(" "+trimmed, " .entry "):
				name := entryName(trimmed)
				if name == "" {
					return nil, false, fmt.Sprintf("line %d: no kernel name after .entry", i+1)
				}
				entries = append(entries, entry{name: name})
				cur = &entries[len(entries)-1]
				depth, opened = 0, false
			default:
				return nil, false, fmt.Sprintf("line %d: %q at the top level", i+1, firstWords(trimmed))
			}
		}
		cur.lines = append(cur.lines, line)
		for _, c := range code {
			switch c {
			case '{':
				depth++
				opened = true
			case '}':
				depth--
			}
		}
		if depth < 0 {
			return nil, false, fmt.Sprintf("line %d: unbalanced braces", i+1)
		}
		if opened && depth == 0 {
			cur = nil
		}
	}
	if cur != nil {
		return nil, false, fmt.Sprintf("kernel %s does not end", cur.name)
	}
	if len(entries) == 0 {
		return nil, false, "no kernels"
	}
	if len(header) == 0 {
		return nil, false, "no .version/.target header"
	}
	head := strings.Join(header, "\n") + "\n\n"
	for _, e := range entries {
		body := strings.Join(e.lines, "\n")
		var b strings.Builder
		b.WriteString(head)
		for _, d := range shared {
			if mentions(body, d.name) {
				b.WriteString(d.text)
				b.WriteString("\n")
			}
		}
		b.WriteString(body)
		b.WriteString("\n")
		kernels = append(kernels, PTXKernel{Name: e.name, PTX: b.String()})
	}
	return kernels, true, ""
}

// hasDirective reports whether s starts with one of the directives as a
// whole word.
func hasDirective(s string, dirs ...string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(s, d) && (len(s) == len(d) || s[len(d)] == ' ' || s[len(d)] == '\t') {
			return true
		}
	}
	return false
}

// isIdent reports whether c may appear in a PTX identifier.
func isIdent(c byte) bool {
	return c == '_' || c == '$' || c == '%' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// entryName returns the identifier after ".entry".
func entryName(s string) string {
	i := strings.Index(s, ".entry")
	rest := strings.TrimLeft(s[i+len(".entry"):], " \t")
	n := 0
	for n < len(rest) && isIdent(rest[n]) {
		n++
	}
	return rest[:n]
}

// declName returns the name a one-line declaration declares: the last
// identifier before its array bounds or semicolon.
func declName(s string) string {
	s = strings.TrimSuffix(s, ";")
	if i := strings.IndexByte(s, '['); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimRight(s, " \t")
	j := len(s)
	for j > 0 && isIdent(s[j-1]) {
		j--
	}
	return s[j:]
}

// mentions reports whether name occurs in text as a whole identifier.
func mentions(text, name string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(name)
		if (j == 0 || !isIdent(text[j-1])) && (end == len(text) || !isIdent(text[end])) {
			return true
		}
		i = j + 1
	}
}

// firstWords returns the start of a line for a message.
func firstWords(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// RenameKernel renames kernel from to to in a module of SplitPTX: the
// .entry and the parameters the backends name after it (from_param_N).
// Two kernels whose modules are equal once both are renamed to the same
// name compute the same function of their parameters, so one load can
// serve both (the examples' graphs hold several: the q, k and v
// projections are one kernel three times). It reports false, changing
// nothing, when to already occurs in the text as an identifier.
func RenameKernel(ptx, from, to string) (string, bool) {
	if from == "" || to == "" || mentions(ptx, to) {
		return ptx, false
	}
	var b strings.Builder
	b.Grow(len(ptx))
	for i := 0; i < len(ptx); {
		if !isIdent(ptx[i]) {
			b.WriteByte(ptx[i])
			i++
			continue
		}
		j := i
		for j < len(ptx) && isIdent(ptx[j]) {
			j++
		}
		b.WriteString(renamed(ptx[i:j], from, to))
		i = j
	}
	return b.String(), true
}

// renamed maps one identifier: the kernel's name and its parameters'.
func renamed(id, from, to string) string {
	if id == from {
		return to
	}
	if rest, ok := strings.CutPrefix(id, from+"_param_"); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
		return to + "_param_" + rest
	}
	return id
}
