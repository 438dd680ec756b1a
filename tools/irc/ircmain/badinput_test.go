package ircmain

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ir/strata/runtime/npy"
)

// rawNpy returns a version 1.0 .npy file with the given header fields and
// data, so that tests can write what numpy never would.
func rawNpy(descr string, fortran bool, shape string, data []byte) []byte {
	order := "False"
	if fortran {
		order = "True"
	}
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr, order, shape)
	h += strings.Repeat(" ", 63-(10+len(h))%64) + "\n"
	out := append([]byte("\x93NUMPY\x01\x00"), binary.LittleEndian.AppendUint16(nil, uint16(len(h)))...)
	return append(append(out, h...), data...)
}

// TestBadInputEndToEnd runs irc on the brief's kinds of bad input (malformed
// IR, wrong shapes, an unknown pass, a bad option, missing or malformed
// files, wrong arguments to irc run, failures at run time) and checks each
// ends with the expected status and a message naming the culprit: a
// file:line:col diagnostic for the input's faults, the flag or file for the
// command line's. No case may end in ExitInternal (irc's helper fails the
// test on it).
func TestBadInputEndToEnd(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	vec := func(n int) []byte { return make([]byte, 4*n) }
	neg := file("neg.mlir", []byte(`func.func @main(%v: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.negf %v : tensor<4xf32>
  return %0 : tensor<4xf32>
}
`))
	dyn := file("dyn.mlir", []byte(`func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = "graph.exp"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
`))
	symb := file("symb.mlir", []byte(`func.func @main(%x: tensor<?x4xf32, #graph.dims<[s0, 4]>>, %y: tensor<?xf32, #graph.dims<[s0]>>) -> tensor<?xf32, #graph.dims<[s0]>> {
  %s = "graph.reduce_sum"(%x) <{axes = array<i64: 1>}> : (tensor<?x4xf32, #graph.dims<[s0, 4]>>) -> tensor<?xf32, #graph.dims<[s0]>>
  %a = "graph.add"(%s, %y) : (tensor<?xf32, #graph.dims<[s0]>>, tensor<?xf32, #graph.dims<[s0]>>) -> tensor<?xf32, #graph.dims<[s0]>>
  return %a : tensor<?xf32, #graph.dims<[s0]>>
}
`))
	good := file("good.npy", rawNpy("<f4", false, "(4,)", vec(4)))
	divide := file("div.mlir", []byte(`func.func @main(%a: i32) -> i32 {
  %z = arith.constant 0 : i32
  %q = arith.divsi %a, %z : i32
  return %q : i32
}
`))
	oob := file("oob.mlir", []byte(`func.func @main(%m: memref<4xf32>) -> f32 {
  %i = arith.constant 4 : index
  %x = loop.load %m[%i] : memref<4xf32>
  return %x : f32
}
`))
	gather := file("gather.mlir", []byte(`func.func @main(%x: tensor<6xf32>, %i: tensor<2xi64>) -> tensor<2xf32> {
  %0 = "graph.gather"(%x, %i) <{axis = 0 : i64}> : (tensor<6xf32>, tensor<2xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
`))
	idx, err := npy.FromSlice([]int64{2}, []int64{1, 6})
	if err != nil {
		t.Fatal(err)
	}
	idxFile := filepath.Join(dir, "idx.npy")
	if err := npy.WriteFile(idxFile, idx); err != nil {
		t.Fatal(err)
	}
	x6 := file("x6.npy", rawNpy("<f4", false, "(6,)", vec(6)))
	tests := []struct {
		name   string
		stdin  string
		args   []string
		status int
		want   []string
	}{
		// Malformed IR and wrong shapes: located diagnostics.
		{"wide dense array", `func.func @f() attributes {a = array<i128: 0>} {
  return
}`, nil, ExitDiagnostics, []string{"<stdin>:1:38: error: array attribute element type 'i128' is wider than 64 bits"}},
		{"type too large", "func.func @f(%x: tensor<4294967296x4294967296xf32>) {\n  return\n}", nil, ExitDiagnostics,
			[]string{"<stdin>:1:18: error: tensor type has more than 2^63-1 elements"}},
		{"wrong result shape", `func.func @f(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = "graph.exp"(%x) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}`, nil, ExitDiagnostics, []string{"<stdin>:2:8: error: 'graph.exp' op"}},
		{"overflowing symbolic size", `func.func @f(%x: tensor<?xf32, #graph.dims<[s0*4611686018427387904*4]>>) -> tensor<?xf32, #graph.dims<[s0*4611686018427387904*4]>> {
  %0 = "graph.exp"(%x) : (tensor<?xf32, #graph.dims<[s0*4611686018427387904*4]>>) -> tensor<?xf32, #graph.dims<[s0*4611686018427387904*4]>>
  return %0 : tensor<?xf32, #graph.dims<[s0*4611686018427387904*4]>>
}`, nil, ExitDiagnostics, []string{"<stdin>:2:8: error: 'graph.exp' op operand #0: in #graph.dims", "integer overflow"}},
		// The command line: unknown pass, bad option values, bad flags.
		{"unknown pass", "", []string{neg, "--pass-pipeline=builtin.module(frobnicate)"}, ExitUsage,
			[]string{"'frobnicate' does not refer to a registered pass"}},
		{"bad option value", "", []string{neg, "--pass-pipeline=builtin.module(convert-loop-to-gpu{block=33})"}, ExitUsage,
			[]string{`pass "convert-loop-to-gpu": block=33 must be a multiple of 32`}},
		{"option out of range", "", []string{neg, "--pass-pipeline=builtin.module(convert-loop-to-gpu{vector=99999999999999999999})"}, ExitUsage,
			[]string{"bad value for option 'vector'"}},
		{"unknown option", "", []string{neg, "--pass-pipeline=builtin.module(graph-fuse{row-limt=3})"}, ExitUsage,
			[]string{"pass 'graph-fuse' has no option 'row-limt'", "row-limit"}},
		{"bad flag", "", []string{neg, "--verify-each=perhaps"}, ExitUsage, []string{"verify-each"}},
		{"missing file", "", []string{filepath.Join(dir, "nope.mlir")}, ExitUsage, []string{"nope.mlir"}},
		// irc run: arguments and .npy files.
		{"run missing npy", "", []string{"run", neg, "--input", filepath.Join(dir, "nope.npy")}, ExitUsage, []string{"argument 0: ", "nope.npy"}},
		{"run garbage npy", "", []string{"run", neg, "--input", file("garbage.npy", []byte("hello, world"))}, ExitUsage,
			[]string{"garbage.npy: npy: not a .npy file"}},
		{"run truncated npy", "", []string{"run", neg, "--input", file("trunc.npy", rawNpy("<f4", false, "(4,)", vec(3)))}, ExitUsage,
			[]string{"trunc.npy: npy: reading data: float32 array of shape [4] needs 16 bytes, file has 12"}},
		{"run fortran npy", "", []string{"run", neg, "--input", file("fortran.npy", rawNpy("<f4", true, "(4,)", vec(4)))}, ExitUsage,
			[]string{"Fortran order"}},
		{"run big-endian npy", "", []string{"run", neg, "--input", file("be.npy", rawNpy(">f4", false, "(4,)", vec(4)))}, ExitUsage,
			[]string{`big-endian dtype ">f4"`}},
		{"run bad header", "", []string{"run", neg, "--input", file("hdr.npy", rawNpy("<f4", false, "(4,", vec(4)))}, ExitUsage,
			[]string{"hdr.npy: npy: "}},
		{"run wrong dtype", "", []string{"run", neg, "--input", file("f64.npy", rawNpy("<f8", false, "(4,)", vec(8)))}, ExitUsage,
			[]string{"expected tensor<4xf32> (dtype float32, shape (4,)), got dtype float64, shape (4,)"}},
		{"run wrong shape", "", []string{"run", neg, "--input", file("2x2.npy", rawNpy("<f4", false, "(2, 2)", vec(4)))}, ExitUsage,
			[]string{"expected tensor<4xf32> (dtype float32, shape (4,)), got dtype float32, shape (2, 2)"}},
		{"run too many inputs", "", []string{"run", neg, "--input", good, "--input", good}, ExitUsage, []string{"takes 1 argument, got 2 --input files"}},
		{"run bad shape flag", "", []string{"run", neg, "--random-inputs", "1", "--shape", "arg0=4xq"}, ExitUsage, []string{`--shape "arg0=4xq": "q" is not a size`}},
		{"run shape of no argument", "", []string{"run", neg, "--random-inputs", "1", "--shape", "arg3=4"}, ExitUsage, []string{"@main: --shape arg3: the function has 1 argument"}},
		{"run shape twice", "", []string{"run", neg, "--random-inputs", "1", "--shape", "arg0=4", "--shape", "arg0=4"}, ExitUsage, []string{"--shape arg0 is given twice"}},
		{"run shape without random inputs", "", []string{"run", neg, "--input", good, "--shape", "arg0=4"}, ExitUsage, []string{"--shape sets the shapes of --random-inputs arguments"}},
		{"run shape too large", "", []string{"run", dyn, "--random-inputs", "1", "--shape", "arg0=99999999999x4"}, ExitUsage,
			[]string{"@main: argument 0: shape [99999999999 4] is too large"}},
		{"run result without dtype", "", []string{"run", file("u16.mlir", []byte("func.func @main(%x: tensor<2xui16>) -> tensor<2xui16> {\n  return %x : tensor<2xui16>\n}\n")), "--random-inputs", "1"},
			ExitUsage, []string{"@main: result 0 of type tensor<2xui16>: element type ui16 has no .npy dtype"}},
		{"run inconsistent symbolic sizes", "", []string{"run", symb, "--random-inputs", "1", "--shape", "arg0=3x4", "--shape", "arg1=5", "--pass-pipeline=builtin.module(lower-to-gpu)"},
			ExitUsage, []string{"@main: argument 1 of type tensor<?xf32, #graph.dims<[s0]>> has size 5 in dim 0, but s0 = 3 (argument 0, dim 0)"}},
		// Failures at run time are located at the op.
		{"run division by zero", "", []string{"run", divide, "--random-inputs", "1"}, ExitDiagnostics,
			[]string{"div.mlir:3:8: error: 'arith.divsi' op integer division by zero"}},
		{"run index out of bounds", "", []string{"run", oob, "--random-inputs", "1"}, ExitDiagnostics,
			[]string{"oob.mlir:3:8: error: 'loop.load' op index 4 is out of bounds"}},
		{"run gather out of range", "", []string{"run", gather, "--input", x6, "--input", idxFile}, ExitDiagnostics,
			[]string{"gather.mlir:2:8: error: 'graph.gather' op index 6 is out of range for axis 0 of size 6"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := irc(t, tc.stdin, tc.args...)
			if r.status != tc.status {
				t.Errorf("status %d, want %d; stderr:\n%s", r.status, tc.status, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic") {
				t.Errorf("stderr holds a panic:\n%s", r.stderr)
			}
		})
	}
}
