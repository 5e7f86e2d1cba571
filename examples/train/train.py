"""Trains kjv-devil-tiny, a small Llama on the King James Bible and The Devil's
Dictionary, from nothing but Debian packages, and writes a Hugging Face
checkpoint directory.

Needs (Debian): python3-torch python3-numpy sentencepiece bible-kjv-text
bible-kjv dict-devil. Run with Debian's python, from the repository root:

  nice -n 10 /usr/bin/python3 examples/train/train.py --out examples/kjv-devil-tiny

Deterministic for a given --seed and --steps on one CPU thread. A run stopped
by --minutes keeps the weights it has (the checkpoint is also written every
--save-every steps), but its learning rate never finished decaying.
"""
import argparse
import json
import math
import os
import random
import shutil
import time

import torch
import torch.nn.functional as F

import corpus
import safetensors_file
import tokenizer
from model import LlamaConfig, LlamaForCausalLM

# Tools (by name: the context is short), calls in Hermes' <tool_call> form,
# which the server then expects, and their results. The model is not trained
# on them: structured output makes its calls valid.
CHAT_TEMPLATE = (
    "{% if tools %}"
    "{{ bos_token + '[AVAILABLE_TOOLS]' }}"
    "{% for tool in tools %}{{ ' ' + tool['function']['name'] }}{% endfor %}"
    "{{ ' [/AVAILABLE_TOOLS]' }}"
    "{% endif %}"
    "{% for message in messages %}"
    "{% if message['role'] == 'user' %}"
    "{{ bos_token + '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' and message['tool_calls'] %}"
    "{% for call in message['tool_calls'] %}"
    "{{ '<tool_call>\\n' + ({'name': call['function']['name'], "
    "'arguments': call['function']['arguments']} | tojson) + '\\n</tool_call>' }}"
    "{% endfor %}"
    "{{ eos_token }}"
    "{% elif message['role'] == 'assistant' %}"
    "{{ ' ' + message['content'] + eos_token }}"
    "{% elif message['role'] == 'tool' %}"
    "{{ '[TOOL_RESULTS] ' + message['content'] + ' [/TOOL_RESULTS]' }}"
    "{% else %}"
    "{{ raise_exception('kjv-devil-tiny has only the roles user, assistant and tool, not ' + message['role']) }}"
    "{% endif %}"
    "{% endfor %}"
)
# How often each kind of training document appears per pass over the data.
# The dictionary is a tenth the size of the Bible, so it is seen twice.
MIX = {"bible": 1, "devil": 2, "chat": 1}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="checkpoint directory to write")
    p.add_argument("--work", default="/tmp/kjv-devil-tiny-work", help="scratch directory (tokenizer training files)")
    p.add_argument("--steps", type=int, default=520, help="optimizer steps; the learning-rate schedule spans them")
    p.add_argument("--minutes", type=float, default=45, help="stop early after this much training time")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=256, help="tokens per training sequence")
    p.add_argument("--lr", type=float, default=1.5e-3, help="peak learning rate")
    p.add_argument("--warmup", type=int, default=40)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--save-every", type=int, default=100)
    p.add_argument("--vocab-size", type=int, default=4096)
    return p.parse_args()


def build_tokenizer(split, work, vocab_size):
    os.makedirs(work, exist_ok=True)
    text_file = os.path.join(work, "spm_input.txt")
    with open(text_file, "w", encoding="utf-8") as f:
        for kind in MIX:
            for doc in split["train"][kind]:
                f.write(doc + "\n")
    prefix = os.path.join(work, "spm")
    tokenizer.train_sentencepiece(text_file, prefix, vocab_size)
    tokenizer.convert(prefix + ".model", os.path.join(work, "tokenizer.json"))
    return tokenizer.Tokenizer(os.path.join(work, "tokenizer.json"))


def document_ids(tok, text):
    return [tokenizer.BOS_ID] + tok.encode(text) + [tokenizer.EOS_ID]


def training_stream(docs, tokens_needed, rng):
    """Token ids of the documents (repeated per MIX) in a fresh random order per pass."""
    weighted = [d for kind, reps in MIX.items() for d in docs[kind] * reps]
    stream = []
    while len(stream) < tokens_needed:
        order = list(range(len(weighted)))
        rng.shuffle(order)
        for i in order:
            stream += weighted[i]
    return torch.tensor(stream[:tokens_needed])


def windows(ids, seq):
    """Non-overlapping [n, seq + 1] windows of a stream (inputs and shifted targets)."""
    n = (len(ids) - 1) // seq
    return torch.stack([ids[i * seq:i * seq + seq + 1] for i in range(n)])


def loss_of(model, batch):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(batch[:, :-1])
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))


@torch.no_grad()
def evaluate(model, validation):
    model.eval()
    result = {}
    for kind, batches in validation.items():
        losses = [loss_of(model, b).item() * b.shape[0] for b in batches.split(16)]
        result[kind] = sum(losses) / batches.shape[0]
    model.train()
    return result


def learning_rate(step, args):
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def export(model, work, out):
    """Writes the Hugging Face checkpoint directory."""
    os.makedirs(out, exist_ok=True)
    c = model.config
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(c.hf_config("float16"), f, indent=2)
    with open(os.path.join(out, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": tokenizer.BOS_ID, "eos_token_id": tokenizer.EOS_ID, "do_sample": True,
                   "temperature": 0.8, "top_p": 0.95, "max_length": c.max_position_embeddings}, f, indent=2)
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({
            "tokenizer_class": "PreTrainedTokenizerFast",
            "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": None,
            "add_bos_token": True, "add_eos_token": False,
            "clean_up_tokenization_spaces": False,
            "model_max_length": c.max_position_embeddings,
            "chat_template": CHAT_TEMPLATE,
        }, f, indent=2)
    shutil.copyfile(os.path.join(work, "tokenizer.json"), os.path.join(out, "tokenizer.json"))
    safetensors_file.save(os.path.join(out, "model.safetensors"), model.state_dict(), "F16")


def main():
    args = parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)

    split = corpus.build(args.seed)
    tok = build_tokenizer(split, args.work, args.vocab_size)
    train_docs = {k: [document_ids(tok, d) for d in split["train"][k]] for k in MIX}
    validation = {k: windows(torch.tensor([i for d in split["validation"][k] for i in document_ids(tok, d)]), args.seq)
                  for k in MIX}
    stream = training_stream(train_docs, args.steps * args.batch * args.seq + 1, rng)
    batches = windows(stream, args.seq)

    config = LlamaConfig(vocab_size=args.vocab_size, max_position_embeddings=args.seq)
    model = LlamaForCausalLM(config)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95))
    print(f"parameters {model.parameter_count()}, training tokens per pass "
          f"{sum(len(d) * MIX[k] for k, ds in train_docs.items() for d in ds)}, "
          f"validation windows { {k: v.shape[0] for k, v in validation.items()} }", flush=True)

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "training_log.jsonl"), "w") as log:
        log.write(json.dumps({"args": vars(args), "parameters": model.parameter_count(),
                              "torch": torch.__version__}) + "\n")
        start = time.time()
        step = 0
        while step < args.steps and time.time() - start < args.minutes * 60:
            lr = learning_rate(step, args)
            for group in optimizer.param_groups:
                group["lr"] = lr
            loss = loss_of(model, batches[step * args.batch:(step + 1) * args.batch])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            step += 1
            record = {"step": step, "train_loss": round(loss.item(), 4), "lr": lr, "seconds": round(time.time() - start, 1)}
            if step % args.eval_every == 0 or step == args.steps:
                record["validation_loss"] = {k: round(v, 4) for k, v in evaluate(model, validation).items()}
            log.write(json.dumps(record) + "\n")
            log.flush()
            if step % 10 == 0 or "validation_loss" in record:
                print(record, flush=True)
            if step % args.save_every == 0:
                export(model, args.work, args.out)
        if step % args.eval_every != 0 and step != args.steps:
            log.write(json.dumps({"step": step, "seconds": round(time.time() - start, 1),
                                  "validation_loss": {k: round(v, 4) for k, v in evaluate(model, validation).items()},
                                  "stopped_by": "minutes"}) + "\n")
    export(model, args.work, args.out)
    print(f"done: {step} steps in {time.time() - start:.0f} s, checkpoint in {args.out}", flush=True)


if __name__ == "__main__":
    main()
