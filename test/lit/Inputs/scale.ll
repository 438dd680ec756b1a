target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @scale(ptr addrspace(1) %p, float %s) {
entry:
  %id = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %gep = getelementptr float, ptr addrspace(1) %p, i32 %id
  %v = load float, ptr addrspace(1) %gep
  %r = fmul float %v, %s
  store float %r, ptr addrspace(1) %gep
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
