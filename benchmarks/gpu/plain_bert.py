"""A BERT cross-encoder written against torch alone (no `transformers`), for the GPU benchmark:
the machine it runs on has a CUDA torch and nothing else.

`PlainBertCrossEncoder` computes what `transformers`' `BertForSequenceClassification` with one
label computes (embeddings + LayerNorm, post-norm layers with scaled-dot-product attention and
exact GELU, the tanh pooler on [CLS], dropout, the classifier) and names its parameters as that
class does, so a state dict moves between the two (check_plain_bert.py proves the equality).

Safetensors files are read and written by hand (an 8-byte little-endian header length, a JSON
header, the raw little-endian tensor bytes): neither `safetensors` nor numpy is needed.
"""

import json
import math
import struct

import torch
import torch.nn.functional as F
from torch import nn

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64,
          "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8, "BOOL": torch.bool}
NAMES = {dtype: name for name, dtype in DTYPES.items()}


def read_safetensors(path):
    """The tensors of a safetensors file, by name, on the CPU."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    header.pop("__metadata__", None)
    base = 8 + size
    tensors = {}
    for name, entry in header.items():
        if entry["dtype"] not in DTYPES:
            raise ValueError(f"{path}: tensor {name} has dtype {entry['dtype']}, which this reader does not know")
        dtype = DTYPES[entry["dtype"]]
        start, end = entry["data_offsets"]
        count = math.prod(entry["shape"])
        if (end - start) != count * dtype.itemsize:
            raise ValueError(f"{path}: tensor {name} holds {end - start} bytes for shape {entry['shape']}")
        raw = torch.frombuffer(data, dtype=torch.uint8, count=end - start, offset=base + start) if count else torch.empty(0, dtype=torch.uint8)
        tensors[name] = raw.clone().view(dtype).reshape(entry["shape"])
    return tensors


def write_safetensors(path, tensors):
    """Writes `tensors` (name -> CPU tensor) as a safetensors file, names in sorted order."""
    header, offset, parts = {"__metadata__": {"format": "pt"}}, 0, []
    for name in sorted(tensors):
        tensor = tensors[name].detach().to("cpu").contiguous()
        size = tensor.numel() * tensor.element_size()
        header[name] = {"dtype": NAMES[tensor.dtype], "shape": list(tensor.shape), "data_offsets": [offset, offset + size]}
        parts.append((offset, tensor))
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    body = bytearray(offset)
    if offset:
        target = torch.frombuffer(body, dtype=torch.uint8)
        for start, tensor in parts:
            if tensor.numel():
                target[start:start + tensor.numel() * tensor.element_size()] = tensor.reshape(-1).view(torch.uint8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.write(body)


class Embeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"], padding_idx=c.get("pad_token_id", 0))
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, input_ids, token_type_ids):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids) + self.position_embeddings(positions)
        return self.dropout(self.LayerNorm(x))


class SelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.heads = c["num_attention_heads"]
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.dropout_p = c["attention_probs_dropout_prob"]

    def forward(self, x, bias):
        b, t, h = x.shape

        def split(y):
            return y.view(b, t, self.heads, h // self.heads).transpose(1, 2)

        out = F.scaled_dot_product_attention(split(self.query(x)), split(self.key(x)), split(self.value(x)),
                                             attn_mask=bias, dropout_p=self.dropout_p if self.training else 0.0)
        return out.transpose(1, 2).reshape(b, t, h)


class DenseNorm(nn.Module):
    """`LayerNorm(dropout(dense(x)) + residual)`: BERT's output of a sub-layer."""

    def __init__(self, c, fan_in):
        super().__init__()
        self.dense = nn.Linear(fan_in, c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, x, residual):
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = SelfAttention(c)
        self.output = DenseNorm(c, c["hidden_size"])

    def forward(self, x, bias):
        return self.output(self.self(x, bias), x)


class Intermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        if c.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"hidden_act {c['hidden_act']!r}: this module implements exact GELU only")
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])

    def forward(self, x):
        return F.gelu(self.dense(x))


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = Attention(c)
        self.intermediate = Intermediate(c)
        self.output = DenseNorm(c, c["intermediate_size"])

    def forward(self, x, bias):
        x = self.attention(x, bias)
        return self.output(self.intermediate(x), x)


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))

    def forward(self, x, bias):
        for layer in self.layer:
            x = layer(x, bias)
        return x


class Pooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(self, x):
        return torch.tanh(self.dense(x[:, 0]))


class Bert(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = Embeddings(c)
        self.encoder = Encoder(c)
        self.pooler = Pooler(c)

    def forward(self, input_ids, token_type_ids, attention_mask):
        x = self.embeddings(input_ids, token_type_ids)
        if attention_mask is None:
            # No padding: no mask, so that SDPA may take its flash kernel (as transformers does).
            return self.pooler(self.encoder(x, None))
        # Padding as an additive bias over the keys, in the activations' dtype (as transformers).
        dtype = torch.get_autocast_dtype(x.device.type) if torch.is_autocast_enabled(x.device.type) else x.dtype
        bias = (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
        return self.pooler(self.encoder(x, bias))


class PlainBertCrossEncoder(nn.Module):
    """One score per (query, document) pair: BertForSequenceClassification with one label."""

    def __init__(self, config):
        super().__init__()
        self.bert = Bert(config)
        self.dropout = nn.Dropout(config.get("classifier_dropout") or config["hidden_dropout_prob"])
        self.classifier = nn.Linear(config["hidden_size"], 1)

    def forward(self, input_ids, token_type_ids, attention_mask):
        return self.classifier(self.dropout(self.bert(input_ids, token_type_ids, attention_mask))).squeeze(-1)

    def load_encoder(self, tensors):
        """Loads a BertModel safetensors file's tensors (names without `bert.`); the head stays."""
        state = {f"bert.{name}": t for name, t in tensors.items() if name != "embeddings.position_ids"}
        missing, unexpected = self.load_state_dict(state, strict=False)
        missing = [m for m in missing if not m.startswith("classifier.")]
        if missing or unexpected:
            raise ValueError(f"the weights do not fit the configuration: missing {missing}, unexpected {unexpected}")


def fresh_bert_tensors(config, seed):
    """A BertModel's tensors as a fresh BERT is initialised (transformers' `_init_weights`):
    weights N(0, initializer_range²), biases 0, LayerNorm 1 and 0, the padding row of the word
    embeddings 0; named as in a Hugging Face `model.safetensors`, `embeddings.position_ids` too."""
    generator = torch.Generator().manual_seed(seed)
    std = config["initializer_range"]
    tensors = {}
    for name, p in Bert(config).named_parameters():
        if "LayerNorm" in name:
            value = torch.ones_like(p) if name.endswith("weight") else torch.zeros_like(p)
        elif name.endswith("bias"):
            value = torch.zeros_like(p)
        else:
            value = torch.empty_like(p).normal_(0.0, std, generator=generator)
        tensors[name] = value.detach()
    tensors["embeddings.word_embeddings.weight"][config.get("pad_token_id", 0)] = 0.0
    tensors["embeddings.position_ids"] = torch.arange(config["max_position_embeddings"]).unsqueeze(0)
    return tensors
