package npy

import (
	"fmt"
	"strconv"
	"strings"
)

// DType is the element type of an Array. Only the types below can be read or
// written; every other NumPy dtype is rejected with an error naming it.
type DType uint8

// The supported dtypes. The zero DType is invalid.
const (
	Bool DType = iota + 1
	Int8
	Uint8
	Int16
	Int32
	Int64
	Float16
	Float32
	Float64
)

// dtypeInfo describes each DType: its .npy descriptor (little-endian, or "|"
// where byte order does not apply), its size in bytes and NumPy's name.
var dtypeInfo = [...]struct {
	descr string
	size  int
	name  string
}{
	Bool:    {"|b1", 1, "bool"},
	Int8:    {"|i1", 1, "int8"},
	Uint8:   {"|u1", 1, "uint8"},
	Int16:   {"<i2", 2, "int16"},
	Int32:   {"<i4", 4, "int32"},
	Int64:   {"<i8", 8, "int64"},
	Float16: {"<f2", 2, "float16"},
	Float32: {"<f4", 4, "float32"},
	Float64: {"<f8", 8, "float64"},
}

// Valid reports whether d is one of the supported dtypes.
func (d DType) Valid() bool { return d > 0 && int(d) < len(dtypeInfo) }

// Size returns the size of one element in bytes (0 for an invalid DType).
func (d DType) Size() int {
	if !d.Valid() {
		return 0
	}
	return dtypeInfo[d].size
}

// Descr returns the dtype descriptor written in .npy headers, such as "<f4".
func (d DType) Descr() string {
	if !d.Valid() {
		return ""
	}
	return dtypeInfo[d].descr
}

// String returns NumPy's name for d, such as "float32".
func (d DType) String() string {
	if !d.Valid() {
		return "DType(" + strconv.Itoa(int(d)) + ")"
	}
	return dtypeInfo[d].name
}

// kindNames names NumPy's dtype kinds, for error messages about dtypes this
// package does not support.
var kindNames = map[byte]string{
	'b': "bool", 'i': "int", 'u': "uint", 'f': "float", 'c': "complex",
	'O': "object", 'S': "bytes", 'a': "bytes", 'U': "str", 'V': "void",
	'M': "datetime64", 'm': "timedelta64",
}

// ParseDescr returns the DType of a .npy dtype descriptor such as "<f4".
// Descriptors with little-endian ("<"), native ("=") or not-applicable ("|")
// byte order are accepted; big-endian ones and dtypes outside the supported
// set are rejected with an error naming the dtype.
func ParseDescr(descr string) (DType, error) {
	body := descr
	if len(descr) > 0 && strings.IndexByte("<>=|", descr[0]) >= 0 {
		body = descr[1:]
	}
	if body == "" {
		return 0, fmt.Errorf("unsupported dtype %q", descr)
	}
	if descr[0] == '>' && !strings.HasSuffix(body, "1") {
		return 0, fmt.Errorf("big-endian dtype %q is not supported; save the array with dtype.newbyteorder('<')", descr)
	}
	for d := Bool; d <= Float64; d++ {
		if dtypeInfo[d].descr[1:] == body {
			return d, nil
		}
	}
	name, ok := kindNames[body[0]]
	if !ok {
		return 0, fmt.Errorf("unsupported dtype %q; supported: %s", descr, supportedList())
	}
	// NumPy names numeric dtypes by their width in bits: '<c8' is complex64.
	if bytes, err := strconv.Atoi(body[1:]); err == nil && strings.Contains("iufc", body[:1]) {
		name += strconv.Itoa(bytes * 8)
	}
	return 0, fmt.Errorf("unsupported dtype %q (%s); supported: %s", descr, name, supportedList())
}

func supportedList() string {
	names := make([]string, 0, Float64)
	for d := Bool; d <= Float64; d++ {
		names = append(names, d.String())
	}
	return strings.Join(names, ", ")
}
