// Package safetensors reads and writes the safetensors format and loads a
// file's tensors into a model's parameters by name.
//
// A safetensors file is an 8-byte little-endian header length N, N bytes
// of JSON, then the tensors' bytes. The header maps each tensor's name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets into the data
// after the header), plus an optional "__metadata__" map of strings. Data
// is little-endian and row-major.
//
// Parse checks everything before it trusts it: the header length against
// the file, the JSON, each dtype and shape, that each tensor's byte range
// is inside the data and as long as its shape and dtype say, and that the
// ranges tile the data without holes or overlaps. A bad file is an error
// naming the problem (and the tensor), never a panic.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// DType is a safetensors element type name.
type DType string

// The element types this package reads and writes.
const (
	F32  DType = "F32"
	F64  DType = "F64"
	F16  DType = "F16"
	BF16 DType = "BF16"
	I64  DType = "I64"
	I32  DType = "I32"
	Bool DType = "BOOL"
)

// Size returns the bytes of one element (0 for an unknown type).
func (d DType) Size() int {
	switch d {
	case F64, I64:
		return 8
	case F32, I32:
		return 4
	case F16, BF16:
		return 2
	case Bool:
		return 1
	}
	return 0
}

// MaxHeader is the largest header Parse accepts (100 MB, as the reference
// implementation).
const MaxHeader = 100 << 20

// Tensor is one tensor of a file. Data aliases the file's bytes.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
	start int64 // offset of Data in the file's data (Parse)
}

// Len returns the number of elements.
func (t *Tensor) Len() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is a parsed safetensors file: its tensors in the order of their
// data offsets, and its metadata.
type File struct {
	Tensors  []*Tensor
	Metadata map[string]string
}

// Lookup returns the tensor named name, or nil.
func (f *File) Lookup(name string) *Tensor {
	for _, t := range f.Tensors {
		if t.Name == name {
			return t
		}
	}
	return nil
}

type entry struct {
	DType       DType   `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// Read reads and parses the file at path.
func Read(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Parse parses the bytes of a safetensors file. The tensors' Data alias b.
func Parse(b []byte) (*File, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("safetensors: file of %d bytes is shorter than the 8-byte header length", len(b))
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n > MaxHeader {
		return nil, fmt.Errorf("safetensors: header length %d exceeds the limit of %d bytes", n, MaxHeader)
	}
	if n > uint64(len(b)-8) {
		return nil, fmt.Errorf("safetensors: header length %d exceeds the %d bytes after the length", n, len(b)-8)
	}
	header, data := b[8:8+n], b[8+n:]
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(header))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("safetensors: header is not a JSON object: %w", err)
	}
	if raw == nil {
		return nil, errors.New("safetensors: header is not a JSON object (null)")
	}
	// Trailing bytes may only be the padding spaces writers add.
	if rest := bytes.TrimRight(header[dec.InputOffset():], " \x00"); len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("safetensors: %d bytes after the header's JSON object", len(rest))
	}
	f := &File{}
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &f.Metadata); err != nil {
				return nil, fmt.Errorf("safetensors: __metadata__ is not a map of strings: %w", err)
			}
			continue
		}
		t, err := parseEntry(name, msg, data)
		if err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		f.Tensors = append(f.Tensors, t)
	}
	// The byte ranges tile the data in order, without holes or overlaps.
	off := func(t *Tensor) int { return int(t.start) }
	sort.Slice(f.Tensors, func(i, j int) bool {
		a, b := off(f.Tensors[i]), off(f.Tensors[j])
		if a != b {
			return a < b
		}
		return f.Tensors[i].Name < f.Tensors[j].Name
	})
	pos := 0
	for _, t := range f.Tensors {
		if s := off(t); s != pos {
			if s < pos {
				return nil, fmt.Errorf("safetensors: tensor %q (bytes %d…%d) overlaps the previous tensor (ending at %d)", t.Name, s, s+len(t.Data), pos)
			}
			return nil, fmt.Errorf("safetensors: bytes %d…%d of the data belong to no tensor (before %q)", pos, s, t.Name)
		}
		pos += len(t.Data)
	}
	if pos != len(data) {
		return nil, fmt.Errorf("safetensors: the tensors cover %d bytes of data, the file has %d", pos, len(data))
	}
	return f, nil
}

func parseEntry(name string, msg json.RawMessage, data []byte) (*Tensor, error) {
	var e entry
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("bad entry: %w", err)
	}
	size := e.DType.Size()
	if size == 0 {
		return nil, fmt.Errorf("dtype %q is not one of F32, F64, F16, BF16, I64, I32, BOOL", e.DType)
	}
	if e.Shape == nil {
		return nil, errors.New("no shape")
	}
	elems := int64(1)
	shape := make([]int, len(e.Shape))
	for i, d := range e.Shape {
		if d < 0 {
			return nil, fmt.Errorf("negative size %d in shape %v", d, e.Shape)
		}
		if d > 0 && elems > math.MaxInt64/8/d {
			return nil, fmt.Errorf("shape %v has too many elements", e.Shape)
		}
		elems *= d
		shape[i] = int(d)
	}
	if len(e.DataOffsets) != 2 {
		return nil, fmt.Errorf("data_offsets %v: want [begin, end]", e.DataOffsets)
	}
	begin, end := e.DataOffsets[0], e.DataOffsets[1]
	if begin < 0 || end < begin || end > int64(len(data)) {
		return nil, fmt.Errorf("data_offsets [%d, %d] are outside the %d bytes of data", begin, end, len(data))
	}
	if want := elems * int64(size); end-begin != want {
		return nil, fmt.Errorf("data_offsets [%d, %d] hold %d bytes; shape %v of %s needs %d", begin, end, end-begin, e.Shape, e.DType, want)
	}
	return &Tensor{Name: name, DType: e.DType, Shape: shape, Data: data[begin:end:end], start: begin}, nil
}

// Encode writes tensors (in the given order, names unique) and metadata
// as a safetensors file.
func Encode(w io.Writer, tensors []*Tensor, metadata map[string]string) error {
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	var off int64
	for _, t := range tensors {
		if t.Name == "" || t.Name == "__metadata__" {
			return fmt.Errorf("safetensors: invalid tensor name %q", t.Name)
		}
		if _, dup := header[t.Name]; dup {
			return fmt.Errorf("safetensors: two tensors named %q", t.Name)
		}
		if t.DType.Size() == 0 {
			return fmt.Errorf("safetensors: tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		if len(t.Data) != t.Len()*t.DType.Size() {
			return fmt.Errorf("safetensors: tensor %q: %d bytes for shape %v of %s", t.Name, len(t.Data), t.Shape, t.DType)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[t.Name] = map[string]any{"dtype": t.DType, "shape": shape, "data_offsets": []int64{off, off + int64(len(t.Data))}}
		off += int64(len(t.Data))
	}
	js, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	// Pad the header with spaces so that the data starts 8-byte aligned.
	if r := len(js) % 8; r != 0 {
		js = append(js, bytes.Repeat([]byte{' '}, 8-r)...)
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(js)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(js); err != nil {
		return err
	}
	for _, t := range tensors {
		if _, err := w.Write(t.Data); err != nil {
			return err
		}
	}
	return nil
}

// Write writes a safetensors file at path, through a temporary file
// renamed into place: a failed write leaves no partial file.
func Write(path string, tensors []*Tensor, metadata map[string]string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := Encode(tmp, tensors, metadata); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	return nil
}

// Names returns the file's tensor names, sorted.
func (f *File) Names() []string {
	var out []string
	for _, t := range f.Tensors {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

// String describes a tensor.
func (t *Tensor) String() string {
	dims := make([]string, len(t.Shape))
	for i, d := range t.Shape {
		dims[i] = fmt.Sprint(d)
	}
	return fmt.Sprintf("%s %s[%s]", t.Name, t.DType, strings.Join(dims, ","))
}
