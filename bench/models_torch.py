#!/usr/bin/env python3
"""PyTorch side of Strata's model rows (bench/models.go).

    python3 models_torch.py DIR

DIR is what `strata-models run --out DIR` left: for each row NAME,
NAME.in.safetensors holds the model's weights (under the names of package
nn's Refs) and its inputs (input.*), and NAME.strata.safetensors Strata's
outputs. This script builds the same model in PyTorch from those weights,
writes eager PyTorch's outputs to NAME.torch.safetensors (the reference
the report checks Strata against), times eager and torch.compile, and
writes DIR/models-torch.json (workload -> modes -> ms, first_call_s; for
gpt2_dynamic also total_s and compiles). For gpt2_prefill, gpt2_dynamic, the
decoding rows and resnet50_infer it also runs the model in float32 on the
same weights and writes NAME.f32.safetensors, the reference both bf16 results are held to; for
cnn_small_train, resnet50_train and gpt2_train, the first training step in
float32 (and for gpt2_train PyTorch's step with every op in bf16, the
mixed precision Strata's gpt2.MixedLoss had before it followed autocast,
whose distance from float32 models-torch.json's vs_f32 reports as
torch_all_bf16). With STRATA_TORCH_F64=1 it also runs each of those
references in float64 and reports in vs_f64 how far the float32 reference,
PyTorch's and Strata's results are from it: whether float32 is close
enough to stand for the exact result (torch._dynamo's accuracy check holds
results to a float64 run).

Times are medians of CUDA-event measurements after a warm-up; first calls
start from a cold Inductor cache (a fresh TORCHINDUCTOR_CACHE_DIR and
torch._dynamo.reset()).
"""
import json
import os
import sys
import tempfile
import time
import traceback

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="strata-models-inductor-"))

import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
DEV = "cuda"


# --- safetensors (the format is small enough to read by hand) -------------

DT = {"F32": torch.float32, "F64": torch.float64, "BF16": torch.bfloat16, "F16": torch.float16,
      "I64": torch.int64, "I32": torch.int32, "BOOL": torch.bool}


def read_st(path):
    with open(path, "rb") as f:
        b = f.read()
    n = int.from_bytes(b[:8], "little")
    hdr = json.loads(b[8:8 + n])
    data = bytearray(b[8 + n:])
    out = {}
    for name, e in hdr.items():
        if name == "__metadata__":
            continue
        s, t = e["data_offsets"]
        dt = DT[e["dtype"]]
        x = torch.frombuffer(data[s:t], dtype=dt) if t > s else torch.empty(0, dtype=dt)
        out[name] = x.reshape(e["shape"]).clone()
    return out


def write_st(path, tensors):
    hdr, chunks, off = {}, [], 0
    for name in sorted(tensors):
        x = tensors[name].detach().float().contiguous().cpu()
        raw = x.numpy().tobytes()
        hdr[name] = {"dtype": "F32", "shape": list(x.shape), "data_offsets": [off, off + len(raw)]}
        chunks.append(raw)
        off += len(raw)
    js = json.dumps(hdr).encode()
    js += b" " * (-len(js) % 8)
    with open(path, "wb") as f:
        f.write(len(js).to_bytes(8, "little"))
        f.write(js)
        for c in chunks:
            f.write(c)


# --- timing ---------------------------------------------------------------

def sync():
    torch.cuda.synchronize()


class Timing(float):
    """A median in ms that also carries the fastest and slowest call
    (lo, hi): write_spread puts them beside "ms" in models-torch.json."""

    def __new__(cls, times):
        t = super().__new__(cls, times[len(times) // 2])
        t.lo, t.hi = times[0], times[-1]
        return t

    def __truediv__(self, n):  # per decoding step: the spread scales too
        t = Timing([self.lo / n, float(self) / n, self.hi / n])
        return t


def write_spread(modes):
    """Adds min_ms and max_ms beside each mode's Timing "ms"."""
    for m in (modes or {}).values():
        if isinstance(m, dict) and isinstance(m.get("ms"), Timing):
            m["min_ms"], m["max_ms"] = m["ms"].lo, m["ms"].hi
    return modes


def median_ms(fn, budget_ms=1500, max_iters=30):
    fn()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    est = (time.perf_counter() - t0) * 1e3
    n = int(max(3, min(max_iters, budget_ms / max(est, 1e-3))))
    times = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return Timing(times)


def eager_ms(row, fn, **kw):
    """median_ms of eager fn; for a row STRATA_TORCH_PROFILE lists
    (comma-separated), then three more calls under torch.profiler, whose
    device time by kernel goes to DIR/ROW.torch-profile.txt (strata-models
    run --profile writes Strata's side as DIR/ROW.profile.txt)."""
    return profiled_ms(row, fn, "eager", **kw)


def compiled_ms(row, fn, **kw):
    """eager_ms for torch.compile's fn: its profile goes to
    DIR/ROW.torch-compile-profile.txt."""
    return profiled_ms(row, fn, "compile", **kw)


def profiled_ms(row, fn, mode, **kw):
    ms = median_ms(fn, **kw)
    if row in os.environ.get("STRATA_TORCH_PROFILE", "").split(","):
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                fn()
            sync()
        table = prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=80, max_name_column_width=110)
        name = row + (".torch-profile.txt" if mode == "eager" else ".torch-compile-profile.txt")
        with open(os.path.join(OUT_DIR, name), "w") as f:
            f.write(f"{row}: {mode}, 3 calls under torch.profiler (median {ms:.3f} ms a call without)\n{table}")
    return ms


def first_call_s(fn):
    torch._dynamo.reset()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - t0


# --- the models -------------------------------------------------------------

def to_dev(ts):
    return {k: v.to(DEV) for k, v in ts.items()}


def cnn_forward(p, x):
    def block(h, i):
        h = F.conv2d(h, p[f"conv{i}.weight"], p[f"conv{i}.bias"], padding=1)
        h = F.batch_norm(h, p[f"bn{i}.running_mean"], p[f"bn{i}.running_var"], p[f"bn{i}.weight"], p[f"bn{i}.bias"],
                         training=True, momentum=0.1, eps=1e-5)
        return F.max_pool2d(F.relu(h), 2)
    h = block(block(x, 1), 2)
    # F.linear, as nn.Linear: under autocast the bias is added in bf16 too.
    return F.linear(h.flatten(1), p["fc.weight"].t(), p["fc.bias"])


def cnn_loss(amp):
    """cnn_small_train's loss: with amp, bf16 mixed precision (f32 master
    weights, autocast compute, the cross-entropy on f32 logits, as
    Strata's cnn.MixedLoss); without, all float32 (the reference)."""
    def loss_fn(p, x, y):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            logits = cnn_forward(p, x)
        return F.cross_entropy(wide(logits), y)
    return loss_fn


def cnn_small_train(t):
    p = to_dev({k: v for k, v in t.items() if not k.startswith("input.")})
    x, y = t["input.x"].to(DEV), t["input.y"].to(DEV)
    names = [k for k in p if not k.endswith(("running_mean", "running_var"))]
    keep = ("conv1.weight", "fc.weight", "bn2.bias")

    def first(p, amp, x=x):
        loss = cnn_loss(amp)(p, x, y)
        g = dict(zip(names, torch.autograd.grad(loss, [p[k] for k in names])))
        return {"loss": loss.detach(), **{"grad." + k: g[k] for k in keep}}

    # The float32 gradients on the same weights (copies: the forward
    # updates the running statistics): the reference of both bf16 steps.
    def ref(dt):
        pr = {k: v.to(dt, copy=True) for k, v in p.items()}
        for k in names:
            pr[k].requires_grad_(True)
        return first(pr, False, x.to(dt))
    reference("cnn_small_train", ref)
    for k in names:
        p[k].requires_grad_(True)
    outs = first(p, True)
    loss_fn = cnn_loss(True)
    opt = torch.optim.SGD([p[k] for k in names], lr=0.05, momentum=0.9, weight_decay=5e-4, foreach=True)

    def make_step(f):
        def step():
            opt.zero_grad(set_to_none=True)
            f(p, x, y).backward()
            opt.step()
        return step

    modes = {"eager": {"ms": eager_ms("cnn_small_train", make_step(loss_fn))}}
    if compiles("cnn_small_train"):
        c = torch.compile(loss_fn)
        modes["default"] = {"first_call_s": first_call_s(make_step(c)), "ms": compiled_ms("cnn_small_train", make_step(c))}
    return outs, modes


def gpt2_params(t, dtype):
    return {k: v.to(DEV, dtype) for k, v in t.items() if not k.startswith("input.")}


def gpt2_layers(p):
    n = 0
    while f"h.{n}.ln_1.weight" in p:
        n += 1
    return n


def gpt2_block(p, i, x, heads, attend):
    d = x.shape[-1]
    pre = f"h.{i}."
    h = F.layer_norm(x, (d,), p[pre + "ln_1.weight"], p[pre + "ln_1.bias"], 1e-5)
    qkv = h @ p[pre + "attn.c_attn.weight"] + p[pre + "attn.c_attn.bias"]
    b, t = x.shape[0], x.shape[1]
    q, k, v = qkv.view(b, t, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
    o = attend(i, q, k, v)
    o = o.transpose(1, 2).reshape(b, t, d)
    x = x + o @ p[pre + "attn.c_proj.weight"] + p[pre + "attn.c_proj.bias"]
    h = F.layer_norm(x, (d,), p[pre + "ln_2.weight"], p[pre + "ln_2.bias"], 1e-5)
    h = F.gelu(h @ p[pre + "mlp.c_fc.weight"] + p[pre + "mlp.c_fc.bias"], approximate="tanh")
    return x + h @ p[pre + "mlp.c_proj.weight"] + p[pre + "mlp.c_proj.bias"]


def gpt2_logits(p, idx, heads=12):
    t = idx.shape[1]
    x = p["wte.weight"][idx] + p["wpe.weight"][:t]
    causal = lambda i, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)
    for i in range(gpt2_layers(p)):
        x = gpt2_block(p, i, x, heads, causal)
    d = x.shape[-1]
    return F.layer_norm(x, (d,), p["ln_f.weight"], p["ln_f.bias"], 1e-5) @ p["wte.weight"].t()


def heads_of(p):
    d = p["wte.weight"].shape[1]
    return 12 if d == 768 else 2


# REFS holds, per row, float32 references of its outputs computed from the
# same (bf16) weights: main writes them to NAME.f32.safetensors, and the
# report holds Strata's and PyTorch's bf16 results against them (a bf16 row
# passes when Strata is no further from float32 than PyTorch is).
REFS = {}

# REFS64 holds the same references computed in float64 (STRATA_TORCH_F64).
REFS64 = {}


# REF64_ERRORS holds, per row, why its float64 reference failed.
REF64_ERRORS = {}


def reference(row, run):
    """Records row's references: run(dtype) returns the outputs (name ->
    tensor) of the row's model computed in dtype, float32 (REFS) and, when
    STRATA_TORCH_F64 is set, float64 (REFS64). A float64 run that fails
    (memory, an op without float64) is reported, not the row's failure."""
    REFS[row] = {k: v.detach().float() for k, v in run(torch.float32).items()}
    if not os.environ.get("STRATA_TORCH_F64"):
        return
    try:
        REFS64[row] = {k: v.detach().double() for k, v in run(torch.float64).items()}
    except Exception as e:  # a diagnostic: the row goes on without it
        traceback.print_exc()
        REF64_ERRORS[row] = f"{type(e).__name__}: {e}"[:300]
    torch.cuda.empty_cache()


def wide(x):
    """x for a loss: float32, or float64 where it already is (a float64
    reference stays float64 through its loss)."""
    return x if x.dtype == torch.float64 else x.float()


# ALT_BF16 holds, per row, the outputs of other bf16 policies in PyTorch
# (policy name -> outputs): main reports their distance from REFS beside
# Strata's and PyTorch's in vs_f32; the report does not judge them.
ALT_BF16 = {}


def gpt2_prefill(t):
    p = gpt2_params(t, torch.bfloat16)
    idx = t["input.idx"].to(DEV)
    h = heads_of(p)
    with torch.no_grad():
        f = lambda: gpt2_logits(p, idx, h)
        outs = {"logits_last": f()[:, -1, :]}
        reference("gpt2_prefill", lambda dt: {
            "logits_last": gpt2_logits({k: v.to(dt) for k, v in p.items()}, idx, h)[:, -1, :]})
        modes = {"eager": {"ms": eager_ms("gpt2_prefill", f)}}
        if compiles("gpt2_prefill"):
            c = torch.compile(lambda: gpt2_logits(p, idx, h))
            modes["default"] = {"first_call_s": first_call_s(c), "ms": compiled_ms("gpt2_prefill", c)}
    return outs, modes


def gpt2_dynamic(t):
    """GPT-2's prefill at every length of input.lengths (tokens: the first T
    of input.idx), torch.compile(dynamic=True) over them all: the first pass
    from a cold cache (total_s, first_call_s: its first length), the graphs
    Inductor compiled on the way (compiles), and a later pass (ms)."""
    p = gpt2_params(t, torch.bfloat16)
    full = t["input.idx"].to(DEV)
    lengths = [int(n) for n in t["input.lengths"].tolist()]
    idxs = [full[:, :n].contiguous() for n in lengths]
    h = heads_of(p)
    with torch.no_grad():
        f = lambda idx: gpt2_logits(p, idx, h)
        # clone: a view of the last position would keep all the logits.
        outs = {f"logits_last.{n}": f(idx)[:, -1, :].clone() for n, idx in zip(lengths, idxs)}
        def ref(dt):
            pr = {k: v.to(dt) for k, v in p.items()}
            return {f"logits_last.{n}": gpt2_logits(pr, idx, h)[:, -1, :].clone() for n, idx in zip(lengths, idxs)}
        reference("gpt2_dynamic", ref)
        run_pass = lambda g: [g(idx) for idx in idxs]
        modes = {"eager": {"ms": median_ms(lambda: run_pass(f))}}
        if compiles("gpt2_dynamic"):
            from torch._inductor.compile_fx import compile_fx
            graphs = [0]

            def inductor(gm, example_inputs):  # the default backend, counted
                graphs[0] += 1
                return compile_fx(gm, example_inputs)

            torch._dynamo.reset()
            c = torch.compile(f, dynamic=True, backend=inductor)
            sync()
            t0 = time.perf_counter()
            first = None
            for idx in idxs:
                c(idx)
                sync()
                if first is None:
                    first = time.perf_counter() - t0
            total = time.perf_counter() - t0
            modes["default"] = {"first_call_s": first, "total_s": total, "compiles": graphs[0],
                                "ms": median_ms(lambda: run_pass(c))}
    return outs, modes


def gpt2_loss(h, amp):
    """gpt2_train's loss: with amp, bf16 mixed precision (f32 master
    weights, autocast compute, the cross-entropy on f32 logits, as Strata's
    gpt2.MixedLoss); without, all float32 (the reference)."""
    def loss_fn(p, x, y):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            logits = gpt2_logits(p, x, h)
        return F.cross_entropy(wide(logits).reshape(-1, logits.shape[-1]), y.reshape(-1))
    return loss_fn


def gpt2_loss_all_bf16(h):
    """gpt2_train's loss with every parameter cast to bf16 and every op in
    bf16 (nn.Autocast's policy, which gpt2.MixedLoss used before it
    followed autocast: the residual stream, layer norms and GELU too, which
    autocast keeps in float32), the logits cast to float32 for the
    cross-entropy. A diagnostic: how far the all-bf16 policy is from
    float32 in PyTorch (main reports it beside the row's vs_f32 as
    torch_all_bf16)."""
    def loss_fn(p, x, y):
        logits = gpt2_logits({k: v.to(torch.bfloat16) for k, v in p.items()}, x, h)
        return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
    return loss_fn


# GPT2_KEEP are the parameters gpt2_train compares: their gradients and
# the first AdamW step's changes (bench/models.go runGPT2Train).
GPT2_KEEP = ("wpe.weight", "h.0.attn.c_attn.weight", "ln_f.weight")
GPT2_ADAMW = dict(lr=3e-4, weight_decay=0.1)


def adamw_first_step(w0, g, fused):
    """The change the first step of AdamW (GPT2_ADAMW) makes to w0 with
    gradient g: AdamW is elementwise, so a parameter's step needs only its
    own gradient and state."""
    w = w0.detach().clone()
    w.grad = g.to(w.dtype)
    torch.optim.AdamW([w], **GPT2_ADAMW, **({"fused": True} if fused else {})).step()
    return w.detach() - w0.detach()


def gpt2_train(t):
    p = gpt2_params(t, torch.float32)
    x, y = t["input.x"].to(DEV), t["input.y"].to(DEV)
    h = heads_of(p)
    names = list(p)
    for k in names:
        p[k].requires_grad_(True)

    # The first AdamW step's changes are computed from Strata's gradients
    # on every side: the step is about -lr·sign(g) - lr·wd·w, and from each
    # side's own gradient the elements whose gradient is rounding noise
    # flip sign (session 13 call 2: max_scaled 1 against PyTorch, 0.25% of
    # the elements), which says nothing of the optimizer. From one
    # gradient the outputs compare the optimizers' arithmetic (learning
    # rate, decay, bias correction, eps); the gradients are compared apart.
    sg = read_st(os.path.join(OUT_DIR, "gpt2_train.strata.safetensors"))
    sg = {k: sg["grad." + k].to(DEV) for k in GPT2_KEEP}

    def first(loss_fn, p=p, fused=False):
        """The loss, the kept gradients and the first AdamW step's changes
        from Strata's gradients (fused: with the fused kernel the timed
        steps use)."""
        loss = loss_fn(p, x, y)
        g = dict(zip(names, torch.autograd.grad(loss, [p[k] for k in names])))
        return {"loss": loss.detach(), **{"grad." + k: g[k] for k in GPT2_KEEP},
                **{"step." + k: adamw_first_step(p[k], sg[k], fused) for k in GPT2_KEEP}}

    # The float32 loss and gradients on the same weights and batch (the
    # master weights themselves: autograd.grad leaves them unchanged): the
    # reference both bf16 steps are held to.
    reference("gpt2_train", lambda dt: first(gpt2_loss(h, False), p if dt == torch.float32 else
                                             {k: v.detach().to(dt).requires_grad_(True) for k, v in p.items()}))
    ALT_BF16["gpt2_train"] = {"torch_all_bf16": first(gpt2_loss_all_bf16(h))}
    loss_fn = gpt2_loss(h, True)
    outs = first(loss_fn, fused=True)
    opt = torch.optim.AdamW([p[k] for k in names], **GPT2_ADAMW, fused=True)

    def make_step(f):
        def step():
            opt.zero_grad(set_to_none=True)
            f(p, x, y).backward()
            opt.step()
        return step

    modes = {"eager": {"ms": eager_ms("gpt2_train", make_step(loss_fn), budget_ms=2000, max_iters=10)}}
    if compiles("gpt2_train"):
        c = torch.compile(loss_fn)
        modes["default"] = {"first_call_s": first_call_s(make_step(c)), "ms": compiled_ms("gpt2_train", make_step(c), budget_ms=2000, max_iters=10)}
    return outs, modes


def mark_step():
    """torch.compiler.cudagraph_mark_step_begin where there is one: the
    outputs of the step before may be overwritten from here on."""
    if hasattr(torch, "compiler") and hasattr(torch.compiler, "cudagraph_mark_step_begin"):
        torch.compiler.cudagraph_mark_step_begin()


def gpt2_decode(t, row="gpt2_decode"):
    p = gpt2_params(t, torch.bfloat16)
    prompt = t["input.idx"].to(DEV)
    new_tokens = int(t["input.new_tokens"].item())
    h = heads_of(p)
    d = p["wte.weight"].shape[1]
    ctx = p["wpe.weight"].shape[0]
    layers = gpt2_layers(p)
    b, tp = prompt.shape
    kc = [torch.zeros(b, h, ctx, d // h, device=DEV, dtype=torch.bfloat16) for _ in range(layers)]
    vc = [torch.zeros_like(kc[0]) for _ in range(layers)]
    positions = torch.arange(ctx, device=DEV)

    def head(x):
        return F.layer_norm(x, (d,), p["ln_f.weight"], p["ln_f.bias"], 1e-5) @ p["wte.weight"].t()

    def prefill(idx):
        n = idx.shape[1]
        x = p["wte.weight"][idx] + p["wpe.weight"][:n]

        def attend(i, q, k, v):
            kc[i][:, :, :n] = k
            vc[i][:, :, :n] = v
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        for i in range(layers):
            x = gpt2_block(p, i, x, h, attend)
        logits = head(x[:, -1:, :]).reshape(b, -1)
        return logits.argmax(-1, keepdim=True), logits

    def decode(tok, pos):
        # pos.view(1), not pos: indexing by a 0-d tensor reads it on the host
        # (a graph break before everything else of the step).
        x = p["wte.weight"][tok] + p["wpe.weight"][pos.view(1)].view(1, 1, d)
        mask = (positions <= pos).view(1, 1, 1, ctx)

        def attend(i, q, k, v):
            kc[i].index_copy_(2, pos.view(1), k)
            vc[i].index_copy_(2, pos.view(1), v)
            return F.scaled_dot_product_attention(q, kc[i], vc[i], attn_mask=mask)
        for i in range(layers):
            x = gpt2_block(p, i, x, h, attend)
        logits = head(x).reshape(b, -1)
        return logits.argmax(-1, keepdim=True), logits

    def generate(step):
        with torch.no_grad():
            tok, logits = prefill(prompt)
            first, second = logits, None
            toks = [tok]
            for j in range(1, new_tokens):
                pos = torch.tensor(tp + j - 1, device=DEV)
                # A CUDA graph's outputs are overwritten by its next replay:
                # each replay starts a step, and what outlives it is cloned
                # (the token fed back too, as gpt-fast does).
                mark_step()
                tok, logits = step(tok, pos)
                if second is None:
                    second = logits.clone()
                tok = tok.clone()
                toks.append(tok)
            return torch.cat(toks, 1), first, second

    toks, first, second = generate(decode)
    outs = {"first_logits": first, "decode_logits": second}
    with torch.no_grad():
        # The float32 reference both bf16 runs are held to, as gpt2_prefill's:
        # the prompt's last logits and the first decoding step's, given this
        # side's first token (the same as Strata's unless the two round a
        # near-tie apart: tokens_agree is then 0).
        def ref(dt):
            lg = gpt2_logits({k: v.to(dt) for k, v in p.items()}, torch.cat([prompt, toks[:, :1]], 1), h)
            return {"first_logits": lg[:, -2, :].clone(), "decode_logits": lg[:, -1, :].clone()}
        reference(row, ref)
    modes = {"eager": {"ms": median_ms(lambda: generate(decode), budget_ms=3000, max_iters=5) / new_tokens}}
    if compiles(row):
        # gpt-fast's setup: the weights and the caches have static addresses
        # (as a module's parameters and buffers have), so that the CUDA graph
        # updates the caches in place and reads the weights where they are;
        # without it Inductor skips the graphs ("mutated inputs").
        for x in list(p.values()) + kc + vc + [positions]:
            torch._dynamo.mark_static_address(x)
        from torch._dynamo.utils import counters
        c = torch.compile(decode, mode="reduce-overhead")
        fc = first_call_s(lambda: generate(c))
        modes["reduce-overhead"] = {"first_call_s": fc, "ms": median_ms(lambda: generate(c), budget_ms=3000, max_iters=5) / new_tokens}
        modes["default"] = dict(modes["reduce-overhead"])
        # Inductor counts the graphs it did not capture: 0 when the
        # decoding step replays a CUDA graph.
        modes["reduce-overhead"]["cudagraph_skips"] = counters["inductor"]["cudagraph_skips"]
        print(f"{row}: cudagraph skips {counters['inductor']['cudagraph_skips']}, graph breaks {dict(counters['graph_break'])}",
              file=sys.stderr)
    extra = {"tokens": toks[0:1].cpu().tolist()}
    return outs, modes, extra


def resnet_forward(p, x, training=False):
    """torchvision's resnet50 on the flat parameters p (package nn's names).
    training: batch norm on the batch's statistics, updating the running
    averages in place (momentum 0.1, as nn.BatchNorm2d)."""
    def cbn(pre, h, stride, pad):
        h = F.conv2d(h, p[pre + ".conv.weight"], None, stride=stride, padding=pad)
        return F.batch_norm(h, p[pre + ".bn.running_mean"], p[pre + ".bn.running_var"], p[pre + ".bn.weight"],
                            p[pre + ".bn.bias"], training=training, momentum=0.1, eps=1e-5)
    h = F.relu(cbn("stem", x, 2, 3))
    h = F.max_pool2d(h, 3, 2, 1)
    s = 0
    while f"stages.{s}.0.c1.conv.weight" in p:
        b = 0
        while f"stages.{s}.{b}.c1.conv.weight" in p:
            pre = f"stages.{s}.{b}"
            stride = 2 if (s > 0 and b == 0) else 1
            o = F.relu(cbn(pre + ".c1", h, 1, 0))
            o = F.relu(cbn(pre + ".c2", o, stride, 1))
            o = cbn(pre + ".c3", o, 1, 0)
            sc = cbn(pre + ".downsample", h, stride, 0) if pre + ".downsample.conv.weight" in p else h
            h = F.relu(o + sc)
            b += 1
        s += 1
    h = h.mean((2, 3))
    return F.linear(h, p["fc.weight"].t(), p["fc.bias"])


def resnet50_infer(t):
    p = {k: v.to(DEV) for k, v in t.items() if not k.startswith("input.")}
    p = {k: (v.contiguous(memory_format=torch.channels_last) if v.dim() == 4 else v) for k, v in p.items()}
    x = t["input.x"].to(DEV).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        f = lambda: resnet_forward(p, x)
        outs = {"logits": f()}
        # The same network in float32 on the same (bf16) weights and
        # images: the reference, as gpt2_prefill's.
        reference("resnet50_infer", lambda dt: {"logits": resnet_forward({k: v.to(dt) for k, v in p.items()}, x.to(dt))})
        modes = {"eager": {"ms": eager_ms("resnet50_infer", f)}}
        if compiles("resnet50_infer"):
            c = torch.compile(lambda: resnet_forward(p, x))
            modes["default"] = {"first_call_s": first_call_s(c), "ms": compiled_ms("resnet50_infer", c)}
    return outs, modes


RESNET_SGD = dict(lr=0.1, momentum=0.9, weight_decay=1e-4)


def resnet_loss(amp):
    """The training loss of resnet50_train: with amp, bf16 mixed precision
    (f32 master weights, autocast compute, the cross-entropy with label
    smoothing 0.1 on f32 logits, as Strata's resnet.MixedLoss); without,
    all float32 (the reference)."""
    def loss_fn(p, x, y):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            logits = resnet_forward(p, x, training=True)
        return F.cross_entropy(wide(logits), y, label_smoothing=0.1)
    return loss_fn


def resnet_first_step(p0, x, y, amp):
    """One training step from the weights and running statistics p0 (left
    unchanged): the loss and gradients (the running statistics updated
    once), then SGD's update. Returns the parameters after it, their
    names, the optimizer (momentum buffers filled) and the outputs Strata's
    row records (bench/models.go resnetTrainOutputs)."""
    p = {k: v.clone() for k, v in p0.items()}
    names = [k for k in p if not k.endswith(("running_mean", "running_var"))]
    for k in names:
        p[k].requires_grad_(True)
    loss = resnet_loss(amp)(p, x, y)
    grads = dict(zip(names, torch.autograd.grad(loss, [p[k] for k in names])))
    outs = {"loss": loss.detach()}
    # The last stage s and its last block b (bench/models.go
    # resnetTrainOutputs).
    s = 0
    while f"stages.{s + 1}.0.c1.conv.weight" in p:
        s += 1
    b = 0
    while f"stages.{s}.{b + 1}.c1.conv.weight" in p:
        b += 1
    last = f"stages.{s}.{b}.c3.bn."
    for k in ("stem.conv.weight", "stages.0.0.c3.bn.weight", f"stages.{s}.0.c1.conv.weight",
              f"stages.{s}.{b}.c3.conv.weight", "fc.weight"):
        outs["grad." + k] = grads[k]
    opt = torch.optim.SGD([p[k] for k in names], foreach=True, **RESNET_SGD)
    for k in names:
        p[k].grad = grads[k]
    opt.step()
    # The first step's changes (bench/models.go trainOutputs).
    for k in ("stem.conv.weight", "fc.bias", "stem.bn.running_mean", "stem.bn.running_var",
              last + "running_mean", last + "running_var"):
        outs["step." + k] = p[k].detach() - p0[k]
    return p, names, opt, outs


def resnet50_train(t):
    # Channels-last float32 master weights and images on the GPU, as
    # Strata's row.
    p0 = {k: v.to(DEV) for k, v in t.items() if not k.startswith("input.")}
    p0 = {k: (v.contiguous(memory_format=torch.channels_last) if v.dim() == 4 else v) for k, v in p0.items()}
    x = t["input.x"].to(DEV).contiguous(memory_format=torch.channels_last)
    y = t["input.y"].to(DEV)
    # The float32 step on the same weights: the reference both bf16 steps
    # are held to.
    reference("resnet50_train", lambda dt: resnet_first_step({k: v.to(dt) for k, v in p0.items()}, x.to(dt), y, False)[3])
    p, names, opt, outs = resnet_first_step(p0, x, y, True)
    del p0
    loss_fn = resnet_loss(True)

    def make_step(f):
        def step():
            opt.zero_grad(set_to_none=True)
            f(p, x, y).backward()
            opt.step()
        return step

    modes = {"eager": {"ms": eager_ms("resnet50_train", make_step(loss_fn))}}
    if compiles("resnet50_train"):
        c = torch.compile(loss_fn)
        modes["default"] = {"first_call_s": first_call_s(make_step(c)), "ms": compiled_ms("resnet50_train", make_step(c))}
    return outs, modes


ROWS = {
    "cnn_small_train": cnn_small_train,
    "gpt2_prefill": gpt2_prefill,
    "gpt2_decode": gpt2_decode,
    "gpt2_decode_b8": lambda t: gpt2_decode(t, row="gpt2_decode_b8"),
    "gpt2_dynamic": gpt2_dynamic,
    "resnet50_infer": resnet50_infer,
    "resnet50_train": resnet50_train,
    "gpt2_train": gpt2_train,
}


def compiles(row):
    """Whether to time torch.compile for row: STRATA_TORCH_COMPILE lists
    the rows (comma-separated; unset: all), so that a short device call can
    check outputs against eager PyTorch without Inductor's compile times."""
    rows = os.environ.get("STRATA_TORCH_COMPILE")
    return rows is None or row in rows.split(",")


def scaled_error(got, want):
    """bench.Compare's max_scaled (|g - w| / (|w| + rms(w))), the normwise
    relative error and the root mean square error of got against want."""
    got, want = got.double().flatten(), want.double().flatten()
    rms = want.pow(2).mean().sqrt()
    d = (got - want).abs()
    return {"max_scaled": (d / (want.abs() + rms)).max().item(),
            "norm_rel": (d.norm() / want.norm()).item(),
            "rmse": d.pow(2).mean().sqrt().item()}


def bf16_exact(x):
    """The share of x's elements that bf16 represents exactly."""
    x = x.detach().float()
    return (x == x.to(torch.bfloat16).float()).float().mean().item()


OUT_DIR = "."  # the models' directory (main's argument)


def main():
    global OUT_DIR
    d = OUT_DIR = sys.argv[1]
    with open(os.path.join(d, "models-strata.json")) as f:
        man = json.load(f)
    out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "cuda": torch.version.cuda,
           "triton": "", "ceilings": {"copy_GBps": 0, "bf16_mm_TFLOPs": 0, "fp32_mm_TFLOPs": 0}, "workloads": {}}
    only = sys.argv[2].split(",") if len(sys.argv) > 2 else None
    for name in man["order"]:
        if only and name not in only:
            continue
        path = os.path.join(d, name + ".in.safetensors")
        if not os.path.exists(path):
            out["workloads"][name] = {"modes": None, "error": "no inputs (Strata's side failed)"}
            continue
        t0 = time.time()
        try:
            res = ROWS[name](read_st(path))
            outs, modes = res[0], res[1]
            write_st(os.path.join(d, name + ".torch.safetensors"), outs)
            w = {"modes": write_spread(modes)}
            if len(res) > 2:
                strata = read_st(os.path.join(d, name + ".strata.safetensors"))
                if "tokens" in strata:
                    a, b = strata["tokens"].view(-1).tolist(), res[2]["tokens"][0]
                    same = 0
                    while same < min(len(a), len(b)) and a[same] == b[same]:
                        same += 1
                    w["tokens_agree"] = same
                    w["tokens_total"] = len(b)
            if name in REFS:
                write_st(os.path.join(d, name + ".f32.safetensors"), REFS[name])
                strata = read_st(os.path.join(d, name + ".strata.safetensors"))
                w["vs_f32"] = {k: {"strata": scaled_error(strata[k].to(DEV).float(), ref),
                                   "torch": scaled_error(outs[k].float(), ref)}
                               for k, ref in REFS[name].items()}
                for alt, alt_outs in ALT_BF16.get(name, {}).items():
                    for k, ref in REFS[name].items():
                        w["vs_f32"][k][alt] = scaled_error(alt_outs[k].float(), ref)
            if name in REFS:
                # The share of each output's elements a bf16 rounds to
                # itself: 1 where a side rounded that output to bf16 (a
                # weight's gradient from a bf16 product under autocast).
                w["bf16_exact"] = {k: {"strata": bf16_exact(strata[k]), "torch": bf16_exact(outs[k])} for k in REFS[name]}
            if name in REF64_ERRORS:
                w["vs_f64"] = {"error": REF64_ERRORS[name]}
            if name in REFS64:
                w["vs_f64"] = {k: {"f32": scaled_error(REFS[name][k], ref),
                                   "strata": scaled_error(strata[k].to(DEV), ref),
                                   "torch": scaled_error(outs[k], ref)}
                               for k, ref in REFS64[name].items()}
            out["workloads"][name] = w
        except Exception as e:  # one row's failure must not lose the others
            traceback.print_exc()
            out["workloads"][name] = {"modes": None, "error": f"{type(e).__name__}: {e}"[:500]}
        print(f"{name}: {json.dumps(out['workloads'][name])} ({time.time() - t0:.1f} s)", flush=True)
        with open(os.path.join(d, "models-torch.json"), "w") as f:
            json.dump(out, f, indent=1)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
