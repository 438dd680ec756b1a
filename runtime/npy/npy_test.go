package npy

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/strata-ir/strata/internal/fuzzwatch"
)

// npyV1 builds a version 1.0 file by hand from a header dict and data, padded
// as the format specification asks.
func npyV1(dict string, data []byte) []byte {
	hlen := len(dict) + 1
	pad := 64 - (10+hlen)%64
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(hlen+pad))
	b.WriteString(dict + strings.Repeat(" ", pad) + "\n")
	b.Write(data)
	return b.Bytes()
}

func TestWriteIsByteExact(t *testing.T) {
	a, err := FromSlice([]int64{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := Write(&got, a); err != nil {
		t.Fatal(err)
	}
	// What numpy.save writes for np.arange(1, 7, dtype='<f4').reshape(2, 3):
	// the dict, 20 spaces of growth room for the first dim, then padding so
	// the 10-byte preamble plus the header is 128 bytes.
	dict := "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
	header := dict + strings.Repeat(" ", 128-10-len(dict)-1) + "\n"
	want := []byte("\x93NUMPY\x01\x00\x76\x00" + header)
	for _, v := range []float32{1, 2, 3, 4, 5, 6} {
		want = binary.LittleEndian.AppendUint32(want, math.Float32bits(v))
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("Write:\n got %q\nwant %q", got.Bytes(), want)
	}
}

func TestHeaderShapes(t *testing.T) {
	for _, tc := range []struct {
		shape []int64
		repr  string
	}{
		{nil, "()"},
		{[]int64{0}, "(0,)"},
		{[]int64{7}, "(7,)"},
		{[]int64{1, 2, 3}, "(1, 2, 3)"},
	} {
		h := encodeHeader(Float64, tc.shape)
		if len(h)%64 != 0 {
			t.Errorf("shape %v: header of %d bytes is not 64-aligned", tc.shape, len(h))
		}
		if !bytes.Contains(h, []byte("'shape': "+tc.repr+", }")) {
			t.Errorf("shape %v: header %q lacks %s", tc.shape, h, tc.repr)
		}
		if h[len(h)-1] != '\n' {
			t.Errorf("shape %v: header does not end in a newline", tc.shape)
		}
	}
}

func roundTrip[T Element](t *testing.T, shape []int64, vs []T) {
	t.Helper()
	a, err := FromSlice(shape, vs)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, a); err != nil {
		t.Fatal(err)
	}
	b, err := Read(&buf)
	if err != nil {
		t.Fatalf("%s %v: %v", a.DType, shape, err)
	}
	if b.DType != a.DType || !slices.Equal(b.Shape, shape) {
		t.Errorf("%s %v: read back %s %v", a.DType, shape, b.DType, b.Shape)
	}
	got, err := ToSlice[T](b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, vs) {
		t.Errorf("%s %v: read back %v, want %v", a.DType, shape, got, vs)
	}
	if buf.Len() != 0 {
		t.Errorf("%s %v: Read left %d bytes", a.DType, shape, buf.Len())
	}
}

func TestRoundTrip(t *testing.T) {
	roundTrip(t, []int64{2, 2}, []float64{1.5, -2, math.Inf(1), math.SmallestNonzeroFloat64})
	roundTrip(t, []int64{3}, []float32{1.25, -0, math.MaxFloat32})
	roundTrip(t, []int64{2}, []Float16Bits{0x3c00, 0xfbff})
	roundTrip(t, []int64{2, 1}, []int64{math.MinInt64, math.MaxInt64})
	roundTrip(t, []int64{3}, []int32{-1, 0, math.MaxInt32})
	roundTrip(t, []int64{2}, []int16{-32768, 7})
	roundTrip(t, []int64{2}, []int8{-128, 127})
	roundTrip(t, []int64{2}, []uint8{0, 255})
	roundTrip(t, []int64{1, 3}, []bool{true, false, true})
	roundTrip(t, nil, []float32{42})       // shape ()
	roundTrip(t, []int64{0, 5}, []int32{}) // no elements
}

func TestReadHandMade(t *testing.T) {
	data := binary.LittleEndian.AppendUint64(nil, math.Float64bits(2.5))
	// Keys in another order, double quotes, no trailing comma, Python 2 "L".
	file := npyV1(`{"shape": (1L,), "fortran_order": False, "descr": "<f8"}`, data)
	a, err := Read(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	vs, err := ToSlice[float64](a)
	if diff := cmp.Diff(&Array{DType: Float64, Shape: []int64{1}, Data: data}, a); err != nil || diff != "" || vs[0] != 2.5 {
		t.Errorf("read (-want +got):\n%s (%v)", diff, err)
	}
}

func TestReadVersion2(t *testing.T) {
	dict := "{'descr': '|b1', 'fortran_order': False, 'shape': (), }"
	hlen := len(dict) + 1
	pad := 64 - (12+hlen)%64
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x02\x00")
	binary.Write(&b, binary.LittleEndian, uint32(hlen+pad))
	b.WriteString(dict + strings.Repeat(" ", pad) + "\n\x01")
	a, err := Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	if a.DType != Bool || len(a.Shape) != 0 || !bytes.Equal(a.Data, []byte{1}) {
		t.Errorf("got %+v", a)
	}
}

func TestWriteVersion2ForHugeHeaders(t *testing.T) {
	shape := make([]int64, 30000) // "1, " × 30000 does not fit a uint16 length
	for i := range shape {
		shape[i] = 1
	}
	a := &Array{DType: Uint8, Shape: shape, Data: []byte{9}}
	var buf bytes.Buffer
	if err := Write(&buf, a); err != nil {
		t.Fatal(err)
	}
	if v := buf.Bytes()[6]; v != 2 {
		t.Fatalf("wrote version %d, want 2", v)
	}
	b, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Shape) != len(shape) || !bytes.Equal(b.Data, []byte{9}) {
		t.Errorf("read back rank %d, data %v", len(b.Shape), b.Data)
	}
}

func TestReadErrors(t *testing.T) {
	f4 := func(descr string) []byte {
		return npyV1("{'descr': "+descr+", 'fortran_order': False, 'shape': (1,), }", make([]byte, 16))
	}
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "unexpected EOF"},
		{"magic", []byte("\x93NUMPZ\x01\x00\x00\x00"), "not a .npy file"},
		{"version", []byte("\x93NUMPY\x04\x00\x00\x00"), "unsupported format version 4.0"},
		{"fortran", npyV1("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", make([]byte, 16)), "in Fortran order"},
		{"big-endian", f4("'>f4'"), `big-endian dtype ">f4"`},
		{"complex", f4("'<c8'"), `"<c8" (complex64)`},
		{"object", f4("'|O'"), `"|O" (object)`},
		{"unicode", f4("'<U3'"), `"<U3" (str)`},
		{"uint32", f4("'<u4'"), `"<u4" (uint32)`},
		{"structured", f4("[('a', '<f4'), ('b', '<i4')]"), "structured dtypes"},
		{"truncated data", npyV1("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", make([]byte, 10)), "needs 24 bytes, file has 10"},
		{"missing key", npyV1("{'descr': '<f8', 'shape': (3,), }", nil), `lacks the key "fortran_order"`},
		{"extra key", npyV1("{'descr': '<f8', 'fortran_order': False, 'shape': (), 'x': 1}", nil), "unexpected keys"},
		{"negative dim", npyV1("{'descr': '<f8', 'fortran_order': False, 'shape': (-1,), }", nil), "invalid dimension"},
		{"overflow", npyV1("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", nil), "too many elements"},
		{"not a dict", npyV1("('descr', '<f8')", nil), "not a dict"},
		{"garbage", npyV1("{'descr': <f8}", nil), "malformed header"},
		{"unterminated", npyV1("{'descr': '<f8", nil), "unterminated string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read: error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.npy")
	a, _ := FromSlice([]int64{2}, []int32{5, -6})
	if err := WriteFile(path, a); err != nil {
		t.Fatal(err)
	}
	b, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("ReadFile of what WriteFile wrote (-written +read):\n%s", diff)
	}
	raw, _ := os.ReadFile(path)
	os.WriteFile(path, append(raw, 0), 0o644)
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), "after the array data") {
		t.Errorf("trailing byte: error %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.npy")); err == nil {
		t.Error("missing file: no error")
	}
}

func TestSliceErrors(t *testing.T) {
	if _, err := FromSlice([]int64{2, 2}, []float32{1}); err == nil {
		t.Error("FromSlice with too few values: no error")
	}
	a, _ := FromSlice([]int64{1}, []float32{1})
	if _, err := ToSlice[float64](a); err == nil || !strings.Contains(err.Error(), "dtype float32, not float64") {
		t.Errorf("ToSlice with the wrong type: %v", err)
	}
	bad := &Array{DType: Float32, Shape: []int64{2}, Data: make([]byte, 4)}
	if err := Write(&bytes.Buffer{}, bad); err == nil {
		t.Error("Write of inconsistent array: no error")
	}
}

func FuzzRead(f *testing.F) {
	a, _ := FromSlice([]int64{2, 1}, []int16{1, 2})
	var buf bytes.Buffer
	Write(&buf, a)
	f.Add(buf.Bytes())
	f.Add(npyV1("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ((((1,),),),), }", nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		defer fuzzwatch.Start(data)()
		a, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		if err := a.Validate(); err != nil {
			t.Fatalf("Read returned an invalid array: %v", err)
		}
		var out bytes.Buffer
		if err := Write(&out, a); err != nil {
			t.Fatal(err)
		}
	})
}
