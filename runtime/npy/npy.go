// Package npy reads and writes NumPy .npy files: format versions 1.0, 2.0
// and 3.0 on read, 1.0 (or 2.0 when the header needs it) on write, as
// numpy.save does. Arrays are little-endian and in C order; Fortran-order
// and big-endian files are rejected, as is any dtype outside the set listed
// by DType, each with an error saying why.
//
// The format is specified in numpy/lib/format.py: the magic "\x93NUMPY", a
// major and minor version byte, the header length (uint16 in 1.0, uint32
// later), and an ASCII header holding a Python dict literal such as
//
//	{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
//
// padded with spaces and a final '\n' so the data starts at a multiple of 64
// bytes.
package npy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

const (
	magic = "\x93NUMPY"
	// arrayAlign is the alignment of the data's start, in bytes.
	arrayAlign = 64
	// growthAxisMaxDigits is the room numpy leaves in headers so the first
	// dimension can grow in place (numpy.lib.format.GROWTH_AXIS_MAX_DIGITS).
	growthAxisMaxDigits = 21
	// maxHeaderLen bounds the header we are willing to read.
	maxHeaderLen = 1 << 20
	// preallocLimit bounds the data buffer allocated before any data has been
	// read, so a header claiming a huge shape cannot exhaust memory.
	preallocLimit = 64 << 20
)

// Read reads one array in .npy format from r. It consumes exactly the
// array's bytes, so several arrays can be read from one stream.
func Read(r io.Reader) (*Array, error) {
	var pre [10]byte
	if _, err := io.ReadFull(r, pre[:8]); err != nil {
		return nil, fmt.Errorf("npy: reading magic: %w", noEOF(err))
	}
	if string(pre[:6]) != magic {
		return nil, fmt.Errorf("npy: not a .npy file (bad magic %q)", pre[:6])
	}
	major, minor := pre[6], pre[7]
	var hlen int
	switch major {
	case 1:
		if _, err := io.ReadFull(r, pre[8:10]); err != nil {
			return nil, fmt.Errorf("npy: reading header length: %w", noEOF(err))
		}
		hlen = int(binary.LittleEndian.Uint16(pre[8:10]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("npy: reading header length: %w", noEOF(err))
		}
		n := binary.LittleEndian.Uint32(b[:])
		if n > maxHeaderLen {
			return nil, fmt.Errorf("npy: header length %d exceeds the limit of %d bytes", n, maxHeaderLen)
		}
		hlen = int(n)
	default:
		return nil, fmt.Errorf("npy: unsupported format version %d.%d", major, minor)
	}
	header := make([]byte, hlen)
	if _, err := io.ReadFull(r, header); err != nil {
		return nil, fmt.Errorf("npy: reading header: %w", noEOF(err))
	}
	dt, shape, err := parseHeader(string(header))
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	n, err := NumElements(shape)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	if n > math.MaxInt64/int64(dt.Size()) {
		return nil, fmt.Errorf("npy: shape %v is too large", shape)
	}
	size := n * int64(dt.Size())
	var buf bytes.Buffer
	buf.Grow(int(min(size, preallocLimit)))
	if got, err := io.CopyN(&buf, r, size); err != nil {
		return nil, fmt.Errorf("npy: reading data: %s array of shape %v needs %d bytes, file has %d: %w",
			dt, shape, size, got, noEOF(err))
	}
	return &Array{DType: dt, Shape: shape, Data: buf.Bytes()}, nil
}

// noEOF turns io.EOF into io.ErrUnexpectedEOF: inside a file, running out of
// bytes is always a truncation.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// ReadFile reads the .npy file at path. Bytes after the array are an error.
func ReadFile(path string) (*Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	a, err := Read(br)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return nil, fmt.Errorf("%s: npy: unexpected bytes after the array data", path)
	}
	return a, nil
}

// Write writes a in .npy format, byte for byte as numpy.save would.
func Write(w io.Writer, a *Array) error {
	if err := a.Validate(); err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	if _, err := w.Write(encodeHeader(a.DType, a.Shape)); err != nil {
		return err
	}
	_, err := w.Write(a.Data)
	return err
}

// WriteFile writes a to the file at path, creating or truncating it.
func WriteFile(path string, a *Array) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	if err := Write(bw, a); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// encodeHeader returns the magic, version, header length and padded header
// for an array of dtype dt and shape, as numpy.lib.format writes them.
func encodeHeader(dt DType, shape []int64) []byte {
	var h strings.Builder
	fmt.Fprintf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", dt.Descr(), shapeRepr(shape))
	if len(shape) > 0 {
		h.WriteString(strings.Repeat(" ", growthAxisMaxDigits-len(strconv.FormatInt(shape[0], 10))))
	}
	wrap := func(lenBytes int) (string, bool) {
		hlen := h.Len() + 1 // the trailing '\n'
		pad := arrayAlign - (len(magic)+2+lenBytes+hlen)%arrayAlign
		total := hlen + pad
		return h.String() + strings.Repeat(" ", pad) + "\n", lenBytes == 4 || total <= math.MaxUint16
	}
	out := []byte(magic)
	if s, ok := wrap(2); ok {
		out = append(out, 1, 0)
		out = binary.LittleEndian.AppendUint16(out, uint16(len(s)))
		return append(out, s...)
	}
	s, _ := wrap(4)
	out = append(out, 2, 0)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(s)))
	return append(out, s...)
}

// shapeRepr formats shape as Python's repr of a tuple: (), (3,), (2, 3).
func shapeRepr(shape []int64) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.FormatInt(d, 10)
	}
	if len(shape) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// parseHeader decodes the header dict into a dtype and a shape.
func parseHeader(header string) (DType, []int64, error) {
	v, err := parsePyLiteral(header)
	if err != nil {
		return 0, nil, fmt.Errorf("malformed header %q: %w", strings.TrimSpace(header), err)
	}
	d, ok := v.(pyDict)
	if !ok {
		return 0, nil, fmt.Errorf("header is not a dict: %q", strings.TrimSpace(header))
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if _, ok := d[k]; !ok {
			return 0, nil, fmt.Errorf("header lacks the key %q", k)
		}
	}
	if len(d) != 3 {
		return 0, nil, fmt.Errorf("header has unexpected keys: %q", strings.TrimSpace(header))
	}
	var dt DType
	switch descr := d["descr"].(type) {
	case string:
		if dt, err = ParseDescr(descr); err != nil {
			return 0, nil, err
		}
	case pyList:
		return 0, nil, errors.New("structured dtypes (record arrays) are not supported")
	default:
		return 0, nil, fmt.Errorf("descr is not a dtype descriptor: %v", descr)
	}
	switch fo := d["fortran_order"].(type) {
	case bool:
		if fo {
			return 0, nil, errors.New("arrays in Fortran order are not supported; save a C-order array (numpy.ascontiguousarray)")
		}
	default:
		return 0, nil, fmt.Errorf("fortran_order is not a bool: %v", fo)
	}
	tuple, ok := d["shape"].(pyTuple)
	if !ok {
		return 0, nil, fmt.Errorf("shape is not a tuple: %v", d["shape"])
	}
	shape := make([]int64, len(tuple))
	for i, e := range tuple {
		n, ok := e.(int64)
		if !ok || n < 0 {
			return 0, nil, fmt.Errorf("shape has an invalid dimension: %v", e)
		}
		shape[i] = n
	}
	return dt, shape, nil
}
