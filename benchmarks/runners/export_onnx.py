"""Exports a Hugging Face encoder directory to the layout transformers.js reads: the tokenizer
and config files beside `onnx/model.onnx` (the last hidden state of input_ids, attention_mask,
token_type_ids; batch and sequence dynamic). Usage: export_onnx.py <model dir> <out dir>"""
import shutil
import sys
from pathlib import Path

import torch
from transformers import AutoModel


class LastHiddenState(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state


def main():
    source, out = Path(sys.argv[1]), Path(sys.argv[2])
    (out / "onnx").mkdir(parents=True, exist_ok=True)
    for name in ["config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"]:
        if (source / name).exists():
            shutil.copy(source / name, out / name)
    model = AutoModel.from_pretrained(source).eval()
    ids = torch.ones(2, 16, dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {name: {0: "batch", 1: "sequence"} for name in names + ["last_hidden_state"]}
    torch.onnx.export(LastHiddenState(model), (ids, torch.ones_like(ids), torch.zeros_like(ids)), out / "onnx" / "model.onnx",
                      input_names=names, output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17, dynamo=False)


if __name__ == "__main__":
    main()
