#!/usr/bin/env python3
"""Time one SeqFlow training step in PyTorch eager mode, the baseline of
BENCHMARKS.md's "Training step against PyTorch".

The architecture is SeqFlow's as engine/train builds it (model/config.go's
presets; nfbo_reference.md a and b): unit-norm token embeddings plus Gaussian
noise, K autoregressive blocks, each an LSTM over [y_t ; c_{t+1}] (c the
positional one-hot code, P = 2 * MaxT wide) started from an MLP of c_0, then
C NLSq couplings whose nets read [the conditioning half ; the LSTM context];
loss = NLL + similarity loss; Adam with gradient clipping at norm 1. The
LSTM input is dense, as in the reference code. Noise is drawn without the
rejection sampling (a CPU loop in both implementations, not measured here).

Usage: python3 scripts/bench_torch.py [-preset small|medium|paper] [-B 32]
       [-T 70] [-V 185] [-steps 8] [-threads 2] [-device cpu|cuda] [-compile]
Needs Debian's python3-torch (apt-get install python3-torch) on the CPU, or
any CUDA build of PyTorch with -device cuda (the GPU baseline of issue #15);
it prints the median seconds per step and sequences per second.
"""
import argparse
import math
import statistics
import time

import torch
import torch.nn as nn

PRESETS = {
    # F, MaxT, blocks, LSTM layers, H, couplings, U, coupling depth
    "small": dict(F=40, MaxT=288, K=2, L=1, H=256, C=4, U=64, depth=2),
    "medium": dict(F=40, MaxT=288, K=3, L=1, H=320, C=6, U=80, depth=2),
    "paper": dict(F=40, MaxT=288, K=5, L=2, H=500, C=10, U=100, depth=2),
}
LOG_A = math.log(8 * math.sqrt(3) / 9 - 0.05)


def nlsq(o, w):
    """u(w) and log du/dw of the NLSq map with raw parameters o [..., 5]."""
    a, lb, o2, ld, f = o.unbind(-1)
    lb, ld = 0.4 * lb, 0.4 * ld
    b, d = lb.exp(), ld.exp()
    c = torch.tanh(0.3 * o2) * (lb - ld + LOG_A).exp()
    s = d * w + f
    den = 1 + s * s
    u = a + b * w + c / den
    deriv = b - 2 * c * d * s / (den * den)
    return u, deriv.log()


class Block(nn.Module):
    def __init__(self, F, P, L, H, C, U, depth):
        super().__init__()
        self.L, self.H, self.half = L, H, F // 2
        self.init = nn.Sequential(nn.Linear(P, H), nn.ReLU(), nn.Linear(H, 2 * L * H))
        self.lstm = nn.LSTM(F + P, H, num_layers=L, batch_first=True, dropout=0.2 if L > 1 else 0)
        self.nets = nn.ModuleList()
        for _ in range(C):
            layers, width = [], self.half + H
            for _ in range(depth):
                layers += [nn.Linear(width, U), nn.ReLU()]
                width = U
            layers.append(nn.Linear(width, self.half * 5))
            self.nets.append(nn.Sequential(*layers))
        self.drop = nn.Dropout(0.2)

    def forward(self, y, pos, k):
        # y [B, T, F]; pos [T, P] positional codes.
        B, T, _ = y.shape
        st = self.init(pos[0]).view(self.L, self.H, 2)
        h0 = st[:, :, 0].unsqueeze(1).expand(self.L, B, self.H).contiguous()
        c0 = st[:, :, 1].unsqueeze(1).expand(self.L, B, self.H).contiguous()
        x = torch.cat([y[:, :-1], pos[1:].unsqueeze(0).expand(B, T - 1, -1)], dim=2)
        out, _ = self.lstm(x, (h0, c0))
        ctx = self.drop(torch.cat([h0[-1].unsqueeze(1), out], dim=1))  # [B, T, H]
        lo, hi = y[..., : self.half], y[..., self.half:]
        logdet = y.new_zeros(B, T)
        for j, net in enumerate(self.nets):
            rev = (k + j) % 2 == 1
            cond, w = (hi, lo) if rev else (lo, hi)
            o = net(torch.cat([cond, ctx], dim=2)).view(B, T, self.half, 5)
            u, ld = nlsq(o, w)
            logdet = logdet + ld.sum(-1)
            if rev:
                lo = u
            else:
                hi = u
        return torch.cat([lo, hi], dim=2), logdet


class SeqFlow(nn.Module):
    def __init__(self, V, T, F, MaxT, K, L, H, C, U, depth):
        super().__init__()
        self.T, self.F, self.MaxT = T, F, MaxT
        self.embed = nn.Parameter(torch.randn(V, F))
        self.blocks = nn.ModuleList(Block(F, 2 * MaxT, L, H, C, U, depth) for _ in range(K))
        pos = torch.zeros(T, 2 * MaxT)
        for t in range(T):
            pos[t, t] = 1
            pos[t, MaxT + T - 1 - t] = 1
        self.register_buffer("pos", pos)

    def loss(self, tok, neg):
        E = self.embed / self.embed.norm(dim=1, keepdim=True)
        ex, ej = E[tok], E[neg]
        v = ex + 0.1 * torch.randn_like(ex)
        vn = v.norm(dim=2)
        sim = 1 - (v * ex).sum(2) / vn + torch.relu((v * ej).sum(2) / vn)
        y, logdet = v, 0
        for k, blk in enumerate(self.blocks):
            y, ld = blk(y, self.pos, k)
            logdet = logdet + ld
        logp = -0.5 * (y * y).sum(2) + logdet - 0.5 * self.F * math.log(2 * math.pi)
        return (-logp + sim).sum(1).mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-preset", default="small", choices=PRESETS)
    ap.add_argument("-B", type=int, default=32)
    ap.add_argument("-T", type=int, default=70)
    ap.add_argument("-V", type=int, default=185)
    ap.add_argument("-steps", type=int, default=8)
    ap.add_argument("-threads", type=int, default=2)
    ap.add_argument("-device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("-compile", action="store_true", help="the loss under torch.compile (the GPU's second baseline)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    dev = torch.device(a.device)
    m = SeqFlow(a.V, a.T, **PRESETS[a.preset]).to(dev)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    tok = torch.randint(a.V, (a.B, a.T), device=dev)
    neg = torch.randint(a.V, (a.B, a.T), device=dev)
    if a.device == "cuda":
        # Full fp32, as nfbo's GPU engine computes (cuBLAS pedantic math): no TF32.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    loss_fn = torch.compile(m.loss) if a.compile else m.loss
    warm = 3 if a.compile else 1  # compiling takes the first steps
    times = []
    for i in range(a.steps + warm):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(tok, neg)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        if a.device == "cuda":
            torch.cuda.synchronize()  # kernels run asynchronously: time the step, not its launch
        if i >= warm:  # the first steps warm up (and compile)
            times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    n = sum(p.numel() for p in m.parameters())
    where = torch.cuda.get_device_name(dev) if a.device == "cuda" else f"threads={a.threads}"
    mode = "compile" if a.compile else "eager"
    print(f"pytorch {torch.__version__} {mode} {where} preset={a.preset} params={n} B={a.B} T={a.T} V={a.V}: "
          f"median {med:.3f} s/step over {len(times)} steps ({a.B / med:.1f} seq/s), min {min(times):.3f}")


if __name__ == "__main__":
    main()
