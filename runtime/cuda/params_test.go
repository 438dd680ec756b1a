package cuda

import (
	"bytes"
	"strings"
	"testing"
	"unsafe"
)

// mapImage is an encoded tensor map's bytes (any 128).
var mapImage = func() *[TensorMapBytes]byte {
	var b [TensorMapBytes]byte
	for i := range b {
		b[i] = byte(3 * i)
	}
	return &b
}()

func TestPackParamsImages(t *testing.T) {
	tests := []struct {
		arg  any
		want []byte
	}{
		{DevicePtr(0x1122334455667788), []byte{0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11}},
		{int64(-2), []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{int(1 << 40), []byte{0, 0, 0, 0, 0, 1, 0, 0}},
		{uint64(7), []byte{7, 0, 0, 0, 0, 0, 0, 0}},
		{int32(-1), []byte{0xff, 0xff, 0xff, 0xff}},
		{uint32(0xdeadbeef), []byte{0xef, 0xbe, 0xad, 0xde}},
		{uint16(0x3c00), []byte{0x00, 0x3c}}, // f16 1.0
		{int16(-2), []byte{0xfe, 0xff}},
		{int8(-1), []byte{0xff}},
		{uint8(9), []byte{9}},
		{true, []byte{1}},
		{false, []byte{0}},
		{float32(1), []byte{0x00, 0x00, 0x80, 0x3f}},
		{float64(-2), []byte{0, 0, 0, 0, 0, 0, 0, 0xc0}},
		{tensorMapImage{mapImage}, mapImage[:]},
	}
	args := make([]any, len(tests))
	for i, tt := range tests {
		args[i] = tt.arg
	}
	p, err := packParams(args)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.ptrs) != len(tests) {
		t.Fatalf("got %d pointers, want %d", len(p.ptrs), len(tests))
	}
	for i, tt := range tests {
		if got := p.bytes(i); !bytes.Equal(got, tt.want) {
			t.Errorf("arg %d (%T %v): image % x, want % x", i, tt.arg, tt.arg, got, tt.want)
		}
		// The driver reads through the pointer array, so check that path
		// too: element i of the array handed to cuLaunchKernel.
		elem := *(*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(p.array()), i*int(unsafe.Sizeof(unsafe.Pointer(nil)))))
		if elem != p.ptrs[i] {
			t.Errorf("arg %d: array element %p, want %p", i, elem, p.ptrs[i])
		}
		if uintptr(elem)%8 != 0 {
			t.Errorf("arg %d: value at %p is not 8-byte aligned", i, elem)
		}
	}
	// Distinct arguments must not share storage.
	seen := map[unsafe.Pointer]int{}
	for i, q := range p.ptrs {
		if j, dup := seen[q]; dup {
			t.Errorf("args %d and %d share storage", j, i)
		}
		seen[q] = i
	}
}

func TestPackParamsEmpty(t *testing.T) {
	p, err := packParams(nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.array() != nil {
		t.Errorf("no arguments: array = %p, want nil", p.array())
	}
}

func TestPackParamsUnsupported(t *testing.T) {
	_, err := packParams([]any{DevicePtr(1), "oops"})
	if err == nil || !strings.Contains(err.Error(), "kernel argument 1: unsupported type string") {
		t.Errorf("got %v, want an error naming argument 1 and its type", err)
	}
}
