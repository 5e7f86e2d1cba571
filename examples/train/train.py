"""Trains kjv-devil-tiny, a small Llama on the King James Bible and The Devil's
Dictionary, from nothing but Debian packages, and writes a Hugging Face
checkpoint directory.

Needs (Debian): python3-torch python3-numpy sentencepiece bible-kjv-text
bible-kjv dict-devil. Run with Debian's python, from the repository root:

  nice -n 19 /usr/bin/python3 examples/train/train.py --out examples/kjv-devil-tiny

A long run on a CPU can be spread over many sittings: --minutes stops it (the
training state is saved in --work every --save-every steps and at the stop),
and --resume goes on from the saved state with the same data order and
learning-rate schedule. The schedule warms up, holds the peak learning rate,
and decays over the last --decay-fraction of --steps, so a resumed run may
also be given a different --steps. Deterministic for a given --seed, --steps
and --threads 1.
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

# Each turn is a document of its own (<s> ... </s>) whose roles are special
# tokens, so a plain completion never sees the chat format. Tools (by name: the
# context is short), calls in Hermes' <tool_call> form, which the server then
# expects, and their results: the model is not trained on them; structured
# output makes its calls valid.
CHAT_TEMPLATE = (
    "{% if tools %}"
    "{{ bos_token + '[AVAILABLE_TOOLS]' }}"
    "{% for tool in tools %}{{ ' ' + tool['function']['name'] }}{% endfor %}"
    "{{ ' [/AVAILABLE_TOOLS]' }}"
    "{% endif %}"
    "{% for message in messages %}"
    "{% if message['role'] == 'user' %}"
    "{{ bos_token + '<|user|>' + message['content'] + '<|assistant|>' }}"
    "{% elif message['role'] == 'assistant' and message['tool_calls'] %}"
    "{% for call in message['tool_calls'] %}"
    "{{ '<tool_call>\\n' + ({'name': call['function']['name'], "
    "'arguments': call['function']['arguments']} | tojson) + '\\n</tool_call>' }}"
    "{% endfor %}"
    "{{ eos_token }}"
    "{% elif message['role'] == 'assistant' %}"
    "{{ message['content'] + eos_token }}"
    "{% elif message['role'] == 'tool' %}"
    "{{ bos_token + '<|user|>[TOOL_RESULTS] ' + message['content'] + ' [/TOOL_RESULTS]<|assistant|>' }}"
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
    p.add_argument("--work", default="/tmp/kjv-devil-tiny-work",
                   help="scratch directory: tokenizer training files and the resumable training state")
    p.add_argument("--resume", action="store_true", help="go on from the training state saved in --work")
    p.add_argument("--steps", type=int, default=4250, help="optimizer steps; the learning-rate schedule spans them")
    p.add_argument("--minutes", type=float, default=float("inf"), help="stop (resumably) after this much training time")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=256, help="tokens per training sequence (the model's context)")
    p.add_argument("--hidden-size", type=int, default=384)
    p.add_argument("--intermediate-size", type=int, default=1024)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--heads", type=int, default=6)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--decay-fraction", type=float, default=0.25,
                   help="the share of --steps at the end over which the learning rate decays to a tenth")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--eval-every", type=int, default=250)
    p.add_argument("--save-every", type=int, default=250)
    p.add_argument("--vocab-size", type=int, default=4096)
    return p.parse_args()


def build_tokenizer(split, work, vocab_size):
    """Trains the tokenizer on the training documents (the chat roles are
    special tokens, not text to learn) and writes work/tokenizer.json."""
    os.makedirs(work, exist_ok=True)
    text_file = os.path.join(work, "spm_input.txt")
    with open(text_file, "w", encoding="utf-8") as f:
        for kind in MIX:
            for doc in split["train"][kind]:
                for special in tokenizer.CHAT_SPECIALS:
                    doc = doc.replace(special, "\n")
                f.write(doc.strip("\n") + "\n")
    prefix = os.path.join(work, "spm")
    tokenizer.train_sentencepiece(text_file, prefix, vocab_size)
    tokenizer.convert(prefix + ".model", os.path.join(work, "tokenizer.json"))
    return tokenizer.Tokenizer(os.path.join(work, "tokenizer.json"))


def windows(ids, seq):
    """Non-overlapping [n, seq + 1] windows of a stream (inputs and shifted targets)."""
    n = (len(ids) - 1) // seq
    return torch.stack([ids[i * seq:i * seq + seq + 1] for i in range(n)])


class TrainingData:
    """The batches of each pass over the documents (repeated per MIX): the
    documents in a fresh random order, cut into windows, the windows shuffled.
    A pass depends only on the seed and its number, so a resumed run sees the
    batches an uninterrupted one would."""

    def __init__(self, docs, seq, batch, seed):
        self.docs = [torch.tensor(d) for kind, reps in MIX.items() for d in docs[kind] * reps]
        self.seq, self.batch, self.seed = seq, batch, seed
        self.pass_number, self.pass_batches = None, None
        tokens = sum(len(d) for d in self.docs)
        self.batches_per_pass = ((tokens - 1) // seq) // batch
        self.tokens_per_pass = tokens

    def batch_at(self, step):
        pass_number, index = divmod(step, self.batches_per_pass)
        if pass_number != self.pass_number:
            order = list(range(len(self.docs)))
            random.Random(f"{self.seed}/{pass_number}").shuffle(order)
            stream = windows(torch.cat([self.docs[i] for i in order]), self.seq)
            shuffle = torch.randperm(stream.shape[0], generator=torch.Generator().manual_seed(self.seed + pass_number))
            self.pass_number, self.pass_batches = pass_number, stream[shuffle]
        return self.pass_batches[index * self.batch:(index + 1) * self.batch]


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
    """Warm-up, then the peak, then a cosine decay to a tenth over the last
    --decay-fraction of --steps (which a resumed run may change)."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    decay_start = args.steps * (1 - args.decay_fraction)
    progress = min(1.0, max(0.0, (step - decay_start) / max(1, args.steps - decay_start)))
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


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


def keep_log_until(log_file, step):
    """Drops the records of steps after `step` that a stopped run logged but
    did not save, so the log tells the training the model had."""
    if not os.path.exists(log_file):
        return
    with open(log_file) as f:
        records = [json.loads(line) for line in f if line.strip()]
    with open(log_file, "w") as f:
        for r in records:
            if r.get("step", 0) <= step:
                f.write(json.dumps(r) + "\n")


ARCHITECTURE = ("vocab_size", "hidden_size", "intermediate_size", "layers", "heads", "kv_heads", "seq")


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    state_file = os.path.join(args.work, "training_state.pt")
    if args.resume and not os.path.exists(state_file):
        raise SystemExit(f"--resume: no training state in {state_file}")
    split = corpus.build(args.seed)
    # A resumed run keeps the tokenizer its model was trained with.
    tok = (tokenizer.Tokenizer(os.path.join(args.work, "tokenizer.json")) if args.resume
           else build_tokenizer(split, args.work, args.vocab_size))
    train_docs = {k: [tok.encode_with_specials(f"<s>{d}</s>") for d in split["train"][k]] for k in MIX}
    validation = {k: windows(torch.tensor([i for d in split["validation"][k] for i in tok.encode_with_specials(f"<s>{d}</s>")]),
                             args.seq) for k in MIX}
    data = TrainingData(train_docs, args.seq, args.batch, args.seed)

    config = LlamaConfig(vocab_size=args.vocab_size, hidden_size=args.hidden_size,
                         intermediate_size=args.intermediate_size, num_hidden_layers=args.layers,
                         num_attention_heads=args.heads, num_key_value_heads=args.kv_heads,
                         max_position_embeddings=args.seq)
    model = LlamaForCausalLM(config, dropout=args.dropout)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95))
    step, elapsed = 0, 0.0
    if args.resume:
        state = torch.load(state_file)
        saved = {k: state["args"][k] for k in ARCHITECTURE}
        if saved != {k: vars(args)[k] for k in ARCHITECTURE}:
            raise SystemExit(f"--resume: {state_file} holds a model with {saved}; pass the same options")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["rng"])
        step, elapsed = state["step"], state["elapsed"]

    def save():
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "rng": torch.get_rng_state(),
                    "step": step, "elapsed": elapsed + time.time() - start, "args": vars(args)}, state_file + ".tmp")
        os.replace(state_file + ".tmp", state_file)
        export(model, args.work, args.out)

    print(f"parameters {model.parameter_count()}, training tokens per pass {data.tokens_per_pass}, "
          f"validation windows { {k: v.shape[0] for k, v in validation.items()} }, "
          f"{'resuming at step ' + str(step) if step else 'from scratch'}", flush=True)

    os.makedirs(args.out, exist_ok=True)
    log_file = os.path.join(args.out, "training_log.jsonl")
    if args.resume:
        keep_log_until(log_file, step)
    with open(log_file, "a" if args.resume else "w") as log:
        log.write(json.dumps({"args": vars(args), "parameters": model.parameter_count(), "start_step": step,
                              "torch": torch.__version__}) + "\n")
        start = time.time()
        while step < args.steps and time.time() - start < args.minutes * 60:
            lr = learning_rate(step, args)
            for group in optimizer.param_groups:
                group["lr"] = lr
            loss = loss_of(model, data.batch_at(step))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            step += 1
            record = {"step": step, "train_loss": round(loss.item(), 4), "lr": lr,
                      "seconds": round(elapsed + time.time() - start, 1)}
            if step % args.eval_every == 0 or step == args.steps:
                record["validation_loss"] = {k: round(v, 4) for k, v in evaluate(model, validation).items()}
            log.write(json.dumps(record) + "\n")
            log.flush()
            if step % 10 == 0 or "validation_loss" in record:
                print(record, flush=True)
            if step % args.save_every == 0:
                save()
        if step % args.eval_every != 0 and step != args.steps:
            log.write(json.dumps({"step": step, "seconds": round(elapsed + time.time() - start, 1),
                                  "validation_loss": {k: round(v, 4) for k, v in evaluate(model, validation).items()},
                                  "stopped_by": "minutes"}) + "\n")
    save()
    print(f"{'done' if step == args.steps else 'stopped (--resume goes on)'}: step {step} of {args.steps}, "
          f"{elapsed + time.time() - start:.0f} s in all, checkpoint in {args.out}", flush=True)


if __name__ == "__main__":
    main()
