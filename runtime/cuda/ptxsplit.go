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
	m, why := parsePTX(ptx)
	if why != "" {
		return nil, false, why
	}
	head := strings.Join(m.header, "\n") + "\n\n"
	for _, e := range m.entries {
		var b strings.Builder
		b.WriteString(head)
		for _, d := range m.shared {
			if mentions(e.text, d.name) {
				b.WriteString(d.text)
				b.WriteString("\n")
			}
		}
		b.WriteString(e.text)
		b.WriteString("\n")
		kernels = append(kernels, PTXKernel{Name: e.name, PTX: b.String()})
	}
	return kernels, true, ""
}

// DedupPTX returns ptx without the kernels that are the same code as an
// earlier kernel of the module once both carry the same name (see
// RenameKernel), and, for each kernel left out, the name of the kept
// kernel to launch instead. The driver's JIT then compiles each distinct
// kernel once (the transformer example's graphs hold 8 and 9 distinct
// kernels of 11: its q, k and v projections are one kernel, and so are
// its two layer norms). ok is false, and ptx returned unchanged, when the
// module has no duplicates or SplitPTX could not read it.
func DedupPTX(ptx string) (out string, same map[string]string, ok bool) {
	m, why := parsePTX(ptx)
	if why != "" || len(m.entries) < 2 {
		return ptx, nil, false
	}
	const canonical = "strata_dedup_kernel"
	first := map[string]string{} // canonical text -> kept kernel
	var kept []ptxEntry
	for _, e := range m.entries {
		text, renamed := RenameKernel(e.text, e.name, canonical)
		if !renamed {
			kept = append(kept, e)
			continue
		}
		if k, dup := first[text]; dup {
			if same == nil {
				same = map[string]string{}
			}
			same[e.name] = k
			continue
		}
		first[text] = e.name
		kept = append(kept, e)
	}
	if len(same) == 0 {
		return ptx, nil, false
	}
	var b strings.Builder
	b.WriteString(strings.Join(m.header, "\n"))
	b.WriteString("\n\n")
	for _, d := range m.shared {
		b.WriteString(d.text)
		b.WriteString("\n")
	}
	for _, e := range kept {
		b.WriteString(e.text)
		b.WriteString("\n")
	}
	return b.String(), same, true
}

// ptxModule is a PTX module read at its top level.
type ptxModule struct {
	header  []string // .version, .target, .address_size
	shared  []ptxDecl
	entries []ptxEntry
}

// ptxDecl is a one-line shared-memory declaration.
type ptxDecl struct{ name, text string }

// ptxEntry is one kernel's text, from its .entry line to its closing brace.
type ptxEntry struct{ name, text string }

// parsePTX reads the top level of a module as SplitPTX describes; why
// says what it could not read ("" when it could).
func parsePTX(ptx string) (m ptxModule, why string) {
	var cur []string
	var name string
	inEntry, depth, opened := false, 0, false
	for i, line := range strings.Split(ptx, "\n") {
		code := line
		if j := strings.Index(code, "//"); j >= 0 {
			code = code[:j]
		}
		trimmed := strings.TrimSpace(code)
		if !inEntry {
			switch {
			case trimmed == "":
				continue // blank lines and comments between kernels
			case hasDirective(trimmed, ".version", ".target", ".address_size"):
				m.header = append(m.header, trimmed)
				continue
			case hasDirective(trimmed, ".shared") || strings.HasPrefix(trimmed, ".extern") && hasDirective(strings.TrimSpace(strings.TrimPrefix(trimmed, ".extern")), ".shared"):
				n := declName(trimmed)
				if n == "" || !strings.HasSuffix(trimmed, ";") {
					return m, fmt.Sprintf("line %d: a shared declaration not on one line", i+1)
				}
				m.shared = append(m.shared, ptxDecl{n, trimmed})
				continue
			case strings.Contains(" "+trimmed, " .entry "):
				if name = entryName(trimmed); name == "" {
					return m, fmt.Sprintf("line %d: no kernel name after .entry", i+1)
				}
				inEntry, depth, opened, cur = true, 0, false, nil
			default:
				return m, fmt.Sprintf("line %d: %q at the top level", i+1, firstWords(trimmed))
			}
		}
		cur = append(cur, line)
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
			return m, fmt.Sprintf("line %d: unbalanced braces", i+1)
		}
		if opened && depth == 0 {
			m.entries = append(m.entries, ptxEntry{name, strings.Join(cur, "\n")})
			inEntry = false
		}
	}
	switch {
	case inEntry:
		return m, fmt.Sprintf("kernel %s does not end", name)
	case len(m.entries) == 0:
		return m, "no kernels"
	case len(m.header) == 0:
		return m, "no .version/.target header"
	}
	return m, ""
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
func isIdent(c byte) bool { return identBytes[c] }

// identBytes marks the bytes of PTX identifiers (a table: RenameKernel
// and parsePTX test every byte of a module).
var identBytes = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c == '_' || c == '$' || c == '%' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	return t
}()

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
	params := from + "_param_"
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
		b.WriteString(renamed(ptx[i:j], from, params, to))
		i = j
	}
	return b.String(), true
}

// renamed maps one identifier: the kernel's name and its parameters'
// (params is from + "_param_").
func renamed(id, from, params, to string) string {
	if id == from {
		return to
	}
	if rest, ok := strings.CutPrefix(id, params); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
		return to + "_param_" + rest
	}
	return id
}
