"""Checks plain_bert.py against `transformers` on the CPU: the real all-MiniLM-L6-v2 weights in
`BertForSequenceClassification` (one label) and in `PlainBertCrossEncoder` give the same scores
(eval mode) and the same gradients after one backward of the benchmark's loss; the hand-written
safetensors reader reads the model file as the `safetensors` package does, and the writer's
files read back through that package.

    python benchmarks/gpu/check_plain_bert.py MODEL_DIR

MODEL_DIR: all-MiniLM-L6-v2 (`node scripts/minilm.mjs` prints it). Needs torch, transformers,
tokenizers and safetensors (the fixtures venv of issue 18 has them). Exits 1 on a mismatch.
"""

import json
import os
import sys
import tempfile

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from transformers import AutoTokenizer, BertForSequenceClassification

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plain_bert import PlainBertCrossEncoder, fresh_bert_tensors, read_safetensors, write_safetensors  # noqa: E402

TOLERANCE = 1e-5


def largest_gap(a, b):
    return float((a - b).abs().max().detach() / b.abs().max().detach().clamp_min(1e-12))


def check(what, gap, failures):
    print(f"{what}: largest difference {gap:.2e} of the largest value (tolerance {TOLERANCE:g})")
    if not gap <= TOLERANCE:
        failures.append(what)


def main():
    model_dir = sys.argv[1]
    failures = []
    theirs = load_file(os.path.join(model_dir, "model.safetensors"))
    ours = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    same = sorted(theirs) == sorted(ours) and all(torch.equal(theirs[k], ours[k]) for k in theirs)
    print(f"reader: {len(ours)} tensors, {'identical to' if same else 'DIFFERENT from'} the safetensors package's")
    if not same:
        failures.append("reader")

    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    fresh = fresh_bert_tensors(config, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        written = os.path.join(tmp, "model.safetensors")
        write_safetensors(written, fresh)
        back = load_file(written)
    round_trip = sorted(back) == sorted(theirs) and all(torch.equal(back[k], fresh[k]) for k in back)
    print(f"writer: fresh weights {'read back identical, with the model file names' if round_trip else 'DIFFER'}")
    if not round_trip:
        failures.append("writer")

    torch.manual_seed(0)
    reference = BertForSequenceClassification.from_pretrained(model_dir, num_labels=1, attn_implementation="sdpa")
    plain = PlainBertCrossEncoder(config)
    plain.load_state_dict({k: v for k, v in reference.state_dict().items() if not k.endswith("position_ids")})
    plain.load_encoder(ours)  # the benchmark's own loading path: changes nothing here
    for m in (reference, plain):
        m.eval()

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    queries = ["what is known about the river", "where is the capital"] * 2
    documents = ["the river is long and famous", "people often visit the bridge in the small city during summer",
                 "a mountain region", "the capital of the region was built during the first century"]
    batch = tokenizer(queries, documents, padding=True, truncation="longest_first", max_length=128, return_tensors="pt")
    inputs = (batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
    print(f"batch: {tuple(inputs[0].shape)}, {int((batch['attention_mask'] == 0).sum())} padding positions")

    def loss_of(scores):
        half = scores.shape[0] // 2
        return F.softplus(scores[half:] - scores[:half]).mean()

    # transformers takes the mask second: by name.
    expected = reference(input_ids=inputs[0], token_type_ids=inputs[1], attention_mask=inputs[2]).logits.squeeze(-1)
    got = plain(*inputs)
    check("scores", largest_gap(got, expected), failures)
    loss_of(expected).backward()
    loss_of(got).backward()
    grads = dict(reference.named_parameters())
    worst = max(((largest_gap(p.grad, grads[n].grad), n) for n, p in plain.named_parameters()), key=lambda x: x[0])
    check(f"gradients of {sum(1 for _ in plain.parameters())} parameters (worst: {worst[1]})", worst[0], failures)
    # A batch without padding goes without a mask (as transformers then does): the same scores.
    full = (inputs[0][:1], inputs[1][:1], torch.ones_like(inputs[2][:1]))
    with torch.no_grad():
        check("scores without a mask", largest_gap(plain(full[0], full[1], None), plain(*full)), failures)
    if failures:
        print(f"FAILED: {', '.join(failures)}")
        sys.exit(1)
    print("plain_bert matches transformers")


if __name__ == "__main__":
    main()
