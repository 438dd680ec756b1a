// Checks the external tools the other tests rely on; it needs no irc.
// REQUIRES: mlir-opt, llc, ptxas
//
// RUN: mlir-opt %s | FileCheck %s
// CHECK: func.func @sanity() {
// CHECK-NEXT: return
func.func @sanity() {
  return
}
//
// LLVM's NVPTX output is accepted by ptxas (CUDA 11.8: up to sm_90, PTX 7.8):
// RUN: llc -mcpu=sm_80 %S/Inputs/scale.ll -o %t.ptx
// RUN: ptxas --gpu-name sm_80 %t.ptx -o %t.cubin && test -s %t.cubin
// RUN: llc -mcpu=sm_90 %S/Inputs/scale.ll -o - | ptxas --gpu-name sm_90 - -o %t.cubin
