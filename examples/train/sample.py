"""Samples completions from a Hugging Face checkpoint directory written by
train.py, in float32 from its safetensors, with temperature and top-p.

  /usr/bin/python3 examples/train/sample.py examples/kjv-devil-tiny "In the beginning"
  /usr/bin/python3 examples/train/sample.py examples/kjv-devil-tiny --chat "Define LAWYER."
"""
import argparse
import json
import os

import jinja2
import torch

import safetensors_file
import tokenizer
from model import LlamaConfig, LlamaForCausalLM


def load(checkpoint):
    with open(os.path.join(checkpoint, "config.json")) as f:
        hf = json.load(f)
    config = LlamaConfig(**{k: hf[k] for k in LlamaConfig.__dataclass_fields__})
    model = LlamaForCausalLM(config)
    model.load_state_dict(safetensors_file.load(os.path.join(checkpoint, "model.safetensors")))
    return model.eval(), tokenizer.Tokenizer(os.path.join(checkpoint, "tokenizer.json"))


def render_chat(checkpoint, messages):
    with open(os.path.join(checkpoint, "tokenizer_config.json")) as f:
        tc = json.load(f)

    def raise_exception(message):
        raise ValueError(message)

    template = jinja2.Environment().from_string(tc["chat_template"])
    return template.render(messages=messages, bos_token=tc["bos_token"],
                           eos_token=tc["eos_token"], add_generation_prompt=True, raise_exception=raise_exception)


@torch.no_grad()
def generate(model, prompt_ids, max_new_tokens, temperature, top_p, generator):
    """Prompt ids plus sampled ones, stopping after </s> or at the context length."""
    ids = list(prompt_ids)
    limit = min(len(ids) + max_new_tokens, model.config.max_position_embeddings)
    while len(ids) < limit:
        logits = model(torch.tensor([ids]))[0, -1] / temperature
        probs, order = logits.softmax(-1).sort(descending=True)
        keep = probs.cumsum(0) - probs < top_p  # smallest prefix whose mass reaches top_p
        probs = probs * keep
        ids.append(order[torch.multinomial(probs / probs.sum(), 1, generator=generator)].item())
        if ids[-1] == tokenizer.EOS_ID:
            break
    return ids


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint")
    p.add_argument("prompts", nargs="+")
    p.add_argument("--chat", action="store_true", help="wrap each prompt in the chat template as a user message")
    p.add_argument("--max-new-tokens", type=int, default=80)
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--top-p", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    torch.set_num_threads(1)
    model, tok = load(a.checkpoint)
    generator = torch.Generator().manual_seed(a.seed)
    for prompt in a.prompts:
        if a.chat:
            prompt_ids = tok.encode_with_specials(render_chat(a.checkpoint, [{"role": "user", "content": prompt}]))
        else:
            prompt_ids = [tokenizer.BOS_ID] + tok.encode(prompt)
        ids = generate(model, prompt_ids, a.max_new_tokens, a.temperature, a.top_p, generator)
        # Decoding the whole text keeps the space between prompt and completion.
        completion = tok.decode(ids)[len(tok.decode(prompt_ids)):]
        print(json.dumps({"prompt": prompt, "completion": completion}, ensure_ascii=False))


if __name__ == "__main__":
    main()
