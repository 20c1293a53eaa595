"""Reads the benchmark's LETOR files: features as a float32 tensor, preference pairs as P × 2 rows.

Pairs are every (i, j) of one query with relevance[i] > relevance[j], as the framework's
PairwiseSampler enumerates them. Each line's `index:value` tokens are parsed by numpy in one
call, which keeps reading out of the way of the wall times being compared.
"""

import numpy as np
import torch


def load_letor(path, num_features):
    relevance, queries, rows = [], [], []
    with open(path) as f:
        for line in f:
            fields = line.split("#", 1)[0].split(None, 2)
            if not fields:
                continue
            relevance.append(int(fields[0]))
            queries.append(fields[1])
            row = np.zeros(num_features, dtype=np.float32)
            if len(fields) > 2:
                pairs = np.array(fields[2].replace(":", " ").split(), dtype=np.float64).reshape(-1, 2)
                row[pairs[:, 0].astype(np.int64) - 1] = pairs[:, 1]
            rows.append(row)
    relevance = np.array(relevance)
    pairs = []
    start = 0
    for end in range(1, len(queries) + 1):
        if end == len(queries) or queries[end] != queries[start]:
            rel = relevance[start:end]
            i, j = np.nonzero(rel[:, None] > rel[None, :])
            pairs.append(np.stack([i + start, j + start], axis=1))
            start = end
    features = torch.from_numpy(np.stack(rows))
    return features, torch.from_numpy(np.concatenate(pairs).astype(np.int64))
