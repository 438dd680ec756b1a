# Which kernels PyTorch's SDPA runs for the attention rows, and their device time.
import torch, torch.nn.functional as F
from torch.profiler import profile, ProfilerActivity
dev = "cuda"
for d in (64, 128):
    for causal in (False, True):
        q, k, v = (torch.randn(16, 16, 1024, d, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
        f = torch.compile(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
        for _ in range(3):
            o = f(q, k, v)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                o = f(q, k, v)
            torch.cuda.synchronize()
        print(f"== forward d{d} causal={causal}")
        print(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=8, max_name_column_width=120))
        if causal:
            g = torch.randn_like(o)
            for _ in range(3):
                o = f(q, k, v); o.backward(g)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(5):
                    o = f(q, k, v); o.backward(g)
                torch.cuda.synchronize()
            print(f"== train d{d} causal={causal}")
            print(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=10, max_name_column_width=120))
