"""Ablation of the TransformerCrossEncoder's design on a planted-signal task, in PyTorch.

Not a fixture generator: a prototype of the task of `synthetic_triplets` (crates/core/src/data/
triplets.rs, another random generator) used to choose the built-in model's pooling, segment
embeddings and initialisation. Run with a Python that has torch:

    python scripts/models/cross_encoder_ablation.py            # all variants
    python scripts/models/cross_encoder_ablation.py tied-mean  # one

Prints the held-out pairwise accuracy after each of 8 epochs of 50 steps (hinge loss, Adam 2e-3,
batch 32, 2,000 training and 300 held-out triplets, documents of 4 to 10 tokens).
"""
import random
import sys
import time

import torch
import torch.nn as nn

def gen(n, seed, vocab=200, qlen=3, minl=6, maxl=20):
    r = random.Random(seed)
    out = []
    for _ in range(n):
        ql = 1 + r.randrange(qlen)
        q = r.sample(range(1, vocab), ql)
        mp = 1 + r.randrange(ql) + ql // 2
        mn = r.randrange(min(mp, ql + 1))
        def doc(m):
            L = minl + r.randrange(maxl - minl + 1)
            d = [t for t in (r.randrange(1, vocab) for _ in range(L * 2)) if t not in q][:L]
            pos = list(range(L)); r.shuffle(pos)
            for k, at in enumerate(pos[:m]): d[at] = q[k % ql]
            return d
        out.append((q, doc(mp), doc(mn)))
    return out

def pad(rows):
    L = max(len(x) for x in rows)
    ids = torch.zeros(len(rows), L, dtype=torch.long)
    for i, x in enumerate(rows): ids[i, :len(x)] = torch.tensor(x)
    return ids, torch.tensor([len(x) for x in rows])

class Dual(nn.Module):
    def __init__(s, vocab, dim, sim):
        super().__init__(); s.embedding = nn.EmbeddingBag(vocab, dim, mode="mean", padding_idx=0); s.sim = sim
    def enc(s, ids, lens):
        return s.embedding(ids)
    def forward(s, q, d):
        a, b = s.enc(*q), s.enc(*d)
        return torch.cosine_similarity(a, b, 1) if s.sim == "cosine" else (a * b).sum(1)

class Cross(nn.Module):
    def __init__(s, vocab, dim, heads, layers, ffn, maxlen, pool, norm_first, segments):
        super().__init__()
        s.vocab = vocab; s.maxlen = maxlen; s.pool = pool
        s.token_embedding = nn.Embedding(vocab + 2, dim, padding_idx=0)
        s.position_embedding = nn.Embedding(maxlen, dim)
        s.segment_embedding = nn.Embedding(2, dim) if segments else None
        s.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(dim, heads, ffn, 0.0, batch_first=True, norm_first=norm_first), layers, enable_nested_tensor=False)
        s.norm = nn.LayerNorm(dim) if norm_first else None
        s.score = nn.Linear(dim, 1)
    def forward(s, q, d):
        rows, segs = [], []
        for qi, qn, di, dn in zip(q[0], q[1], d[0], d[1]):
            qq = qi[:qn].tolist(); dd = di[:dn].tolist()
            rows.append([s.vocab] + qq + [s.vocab + 1] + dd)
            segs.append([0] * (len(qq) + 2) + [1] * len(dd))
        ids, lens = pad(rows); seg, _ = pad(segs)
        mask = ids != 0
        x = s.token_embedding(ids) + s.position_embedding(torch.arange(ids.shape[1]))[None]
        if s.segment_embedding is not None: x = x + s.segment_embedding(seg)
        x = s.encoder(x, src_key_padding_mask=~mask)
        if s.norm is not None: x = s.norm(x)
        if s.pool == "cls": h = x[:, 0]
        else:
            m = mask.float().unsqueeze(-1); h = (x * m).sum(1) / m.sum(1)
        return s.score(h).squeeze(-1)

def run(model, lr, epochs, steps, data, held, bs=32, warm=0):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    r = random.Random(0)
    order = []
    t = time.time()
    hist = []
    for e in range(epochs):
        for st in range(steps):
            if len(order) < bs: order += r.sample(range(len(data)), len(data))
            b = [data[i] for i in order[:bs]]; order = order[bs:]
            q = pad([x[0] for x in b]); p = pad([x[1] for x in b]); n = pad([x[2] for x in b])
            loss = torch.relu(1 - (model(q, p) - model(q, n))).mean()
            opt.zero_grad(); loss.backward(); opt.step()
        with torch.no_grad():
            q = pad([x[0] for x in held]); p = pad([x[1] for x in held]); n = pad([x[2] for x in held])
            acc = (model(q, p) > model(q, n)).float().mean().item()
        hist.append(round(acc, 3))
    return hist, time.time() - t


VARIANTS = {
    # name: (pooling, segment embeddings, key projection initialised as the query projection)
    "cls": ("cls", False, False),
    "mean": ("mean", True, False),
    "tied-cls": ("cls", True, True),
    "tied-mean-no-segments": ("mean", False, True),
    "tied-mean": ("mean", True, True),
}


def main():
    torch.set_num_threads(1)
    data = gen(2000, 1, minl=4, maxl=10)
    held = gen(300, 2, minl=4, maxl=10)
    for name in sys.argv[1:] or VARIANTS:
        pool, segments, tied = VARIANTS[name]
        torch.manual_seed(0)
        model = Cross(200, 32, 1, 1, 64, 32, pool, False, segments)
        if tied:
            with torch.no_grad():
                w = model.encoder.layers[0].self_attn.in_proj_weight
                w[32:64] = w[0:32]
        accuracies, seconds = run(model, 2e-3, 8, 50, data, held)
        print(f"{name:24} {accuracies} {seconds:.0f}s", flush=True)


if __name__ == "__main__":
    main()
