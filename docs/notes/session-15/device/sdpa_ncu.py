# cuDNN's SDPA forward (what torch.compile runs for the attention rows), for ncu: D=64|128 in the environment.
import os, torch, torch.nn.functional as F
d = int(os.environ.get("D", "64"))
causal = os.environ.get("CAUSAL", "0") == "1"
q, k, v = (torch.randn(16, 16, 1024, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
for _ in range(5):
    o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
torch.cuda.synchronize()
print("sdpa done", d, causal, float(o.float().abs().mean()))
