package ircmain

import "strings"

// splitMarker separates the chunks of a --split-input-file input, and the
// outputs of the chunks, as in mlir-opt.
const splitMarker = "// -----"

// chunk is a piece of an input file processed on its own.
type chunk struct {
	text string
	// offset is where the chunk starts in the file, in bytes.
	offset int
	// lineOffset is the number of lines of the file before the chunk's
	// first line, so that diagnostics name lines of the whole file.
	lineOffset int
}

// splitInput cuts src at every line starting with "// -----" (the marker
// lines belong to no chunk). Without split, src is one chunk.
func splitInput(src string, split bool) []chunk {
	if !split {
		return []chunk{{text: src}}
	}
	var chunks []chunk
	start, startLine := 0, 0
	line := 0
	for pos := 0; pos < len(src); line++ {
		end := strings.IndexByte(src[pos:], '\n')
		next := len(src)
		if end >= 0 {
			next = pos + end + 1
		}
		if strings.HasPrefix(strings.TrimSpace(src[pos:next]), splitMarker) {
			chunks = append(chunks, chunk{text: src[start:pos], offset: start, lineOffset: startLine})
			start, startLine = next, line+1
		}
		pos = next
	}
	return append(chunks, chunk{text: src[start:], offset: start, lineOffset: startLine})
}
