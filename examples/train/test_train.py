"""Tests of the training scripts and of the shipped checkpoint.

  /usr/bin/python3 -m unittest discover -s examples/train -v

Needs Debian's python3-torch, python3-numpy, python3-jinja2, sentencepiece and
dict-devil; the Bible tests run where bible-kjv is installed, the Hugging Face
parity test where test/node/node_modules holds npm tokenizers.
"""
import json
import math
import os
import random
import re
import shutil
import struct
import subprocess
import tempfile
import unittest
from pathlib import Path
from unittest import mock

import torch

import corpus
import safetensors_file
import sample
import tokenizer
import train
from model import LlamaConfig, LlamaForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKPOINT = os.path.join(HERE, "..", "kjv-devil-tiny")
NODE_MODULES = os.path.join(HERE, "..", "..", "test", "node", "node_modules")


def read_json(path):
    return json.loads(Path(path).read_text())


TINY = LlamaConfig(vocab_size=300, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16)


class SafetensorsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "w.safetensors")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_round_trip_and_layout(self):
        tensors = {"b": torch.tensor([[1.5, -2.0, 65504.0]]), "a": torch.tensor([0.1])}
        safetensors_file.save(self.path, tensors, "F16")
        blob = Path(self.path).read_bytes()
        (n,) = struct.unpack("<Q", blob[:8])
        header = json.loads(blob[8:8 + n])
        self.assertEqual(n % 8, 0)
        self.assertEqual(header["__metadata__"], {"format": "pt"})
        self.assertEqual(header["a"], {"dtype": "F16", "shape": [1], "data_offsets": [0, 2]})
        self.assertEqual(header["b"], {"dtype": "F16", "shape": [1, 3], "data_offsets": [2, 8]})
        self.assertEqual(len(blob), 8 + n + 8)
        self.assertEqual(blob[8 + n + 2:8 + n + 4], bytes.fromhex("003e"))  # 1.5 in little-endian f16
        loaded = safetensors_file.load(self.path)
        self.assertTrue(torch.equal(loaded["b"], tensors["b"]))
        self.assertAlmostEqual(loaded["a"].item(), 0.1, places=3)

    def test_short_file(self):
        Path(self.path).write_bytes(b"\x01\x00")
        with self.assertRaisesRegex(safetensors_file.SafetensorsError, "shorter than the 8-byte"):
            safetensors_file.load(self.path)

    def test_header_past_end(self):
        Path(self.path).write_bytes(struct.pack("<Q", 100) + b"{}")
        with self.assertRaisesRegex(safetensors_file.SafetensorsError, "header length 100 runs past"):
            safetensors_file.load(self.path)

    def test_unsupported_dtype(self):
        head = json.dumps({"x": {"dtype": "I8", "shape": [1], "data_offsets": [0, 1]}}).encode()
        Path(self.path).write_bytes(struct.pack("<Q", len(head)) + head + b"\x00")
        with self.assertRaisesRegex(safetensors_file.SafetensorsError, "tensor x has dtype I8"):
            safetensors_file.load(self.path)


class TokenizerTest(unittest.TestCase):
    """A tokenizer trained on The Devil's Dictionary, against spm_encode."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        cls.lines = [l for e in corpus.read_devil()[:300] for l in e.split("\n")]
        text = os.path.join(cls.dir, "text.txt")
        Path(text).write_text("\n".join(cls.lines) + "\n")
        tokenizer.train_sentencepiece(text, os.path.join(cls.dir, "spm"), 600)
        tokenizer.convert(os.path.join(cls.dir, "spm.model"), os.path.join(cls.dir, "tokenizer.json"))
        cls.tok = tokenizer.Tokenizer(os.path.join(cls.dir, "tokenizer.json"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def spm_ids(self, lines):
        out = subprocess.run(["spm_encode", f"--model={self.dir}/spm.model", "--output_format=id"],
                             input="\n".join(lines) + "\n", capture_output=True, text=True, check=True).stdout
        return [[int(i) for i in row.split()] for row in out.split("\n")[:-1]]

    def test_matches_spm_encode(self):
        unseen = ["Zebras née ĳ 日本 quoth the raven -- ALWAYS, adv.", "  two  spaces ", "x"]
        lines = self.lines + unseen
        self.assertEqual([self.tok.encode(l) for l in lines], self.spm_ids(lines))

    def test_decode_inverts_encode(self):
        for text in ["LAWYER, n. One skilled", "日本 ĳ\nline two", "  indented"]:
            self.assertEqual(self.tok.decode(self.tok.encode(text)), text)

    def test_unknown_characters_fall_back_to_bytes(self):
        ids = self.tok.encode("日")
        self.assertEqual([self.tok.pieces[i] for i in ids], ["\u2581", "<0xE6>", "<0x97>", "<0xA5>"])

    def test_specials_split_the_text(self):
        user, assistant = (self.tok.vocab[s] for s in tokenizer.CHAT_SPECIALS)
        ids = self.tok.encode_with_specials("<s><|user|>Hi there<|assistant|>Yes</s>")
        self.assertEqual(ids, [1, user] + self.tok.encode("Hi there") + [assistant] + self.tok.encode("Yes") + [2])
        self.assertEqual(self.tok.encode_with_specials("a</s>b"), self.tok.encode("a") + [2] + self.tok.encode("b"))
        self.assertEqual(self.tok.decode(ids), "Hi there Yes")

    def test_chat_roles_end_the_vocabulary_and_never_come_from_text(self):
        self.assertEqual([self.tok.vocab[s] for s in tokenizer.CHAT_SPECIALS], [598, 599])
        self.assertEqual(len(self.tok.vocab), 600)
        ids = self.tok.encode("<|user|> and <|assistant|>")
        self.assertFalse(set(ids) & {598, 599})
        self.assertEqual(self.tok.decode(ids), "<|user|> and <|assistant|>")

    def test_layout_is_llama2s(self):
        j = read_json(os.path.join(self.dir, "tokenizer.json"))
        self.assertEqual([(t["id"], t["content"], t["special"]) for t in j["added_tokens"]],
                         [(0, "<unk>", True), (1, "<s>", True), (2, "</s>", True),
                          (598, "<|user|>", True), (599, "<|assistant|>", True)])
        self.assertEqual(j["model"]["type"], "BPE")
        self.assertTrue(j["model"]["byte_fallback"] and j["model"]["fuse_unk"])
        self.assertEqual(j["model"]["vocab"]["<0x0A>"], 3 + 10)
        self.assertEqual([d["type"] for d in j["decoder"]["decoders"]], ["Replace", "ByteFallback", "Fuse", "Strip"])

    def test_merges_follow_piece_scores_then_part_ids(self):
        pieces = [("<unk>", 0), ("<s>", 0), ("</s>", 0), ("<0x00>", 0), ("ab", 0), ("abc", -1), ("bc", -2),
                  ("a", -3), ("b", -4), ("c", -5)]
        self.assertEqual(tokenizer.merges_from_vocab(pieces), [("a", "b"), ("ab", "c"), ("a", "bc"), ("b", "c")])

    def test_piece_with_space_is_refused(self):
        with self.assertRaisesRegex(tokenizer.TokenizerError, "piece 'a b' contains a space"):
            tokenizer.hf_tokenizer_json([("<unk>", 0), ("<s>", 0), ("</s>", 0), ("a b", -1)])

    def test_missing_spm_train(self):
        with mock.patch("shutil.which", return_value=None):
            with self.assertRaisesRegex(tokenizer.TokenizerError, "install Debian package sentencepiece"):
                tokenizer.train_sentencepiece("in.txt", "out", 100)

    def test_malformed_vocab_export(self):
        bad = subprocess.CompletedProcess([], 0, stdout="<unk>\t0\n<s>\t0\n</s>\t0\nnoscore\n")
        with mock.patch("subprocess.run", return_value=bad):
            with self.assertRaisesRegex(tokenizer.TokenizerError, "line 4 is not 'piece<TAB>score'"):
                tokenizer.export_vocab("m.model")
        wrong = subprocess.CompletedProcess([], 0, stdout="<s>\t0\n<unk>\t0\n</s>\t0\n")
        with mock.patch("subprocess.run", return_value=wrong):
            with self.assertRaisesRegex(tokenizer.TokenizerError, "expected .* at ids 0-2"):
                tokenizer.export_vocab("m.model")
        clash = subprocess.CompletedProcess([], 0, stdout="<unk>\t0\n<s>\t0\n</s>\t0\n<|user|>\t-1\n")
        with mock.patch("subprocess.run", return_value=clash):
            with self.assertRaisesRegex(tokenizer.TokenizerError, "already holds \\['<\\|user\\|>'\\]"):
                tokenizer.export_vocab("m.model")


class CorpusTest(unittest.TestCase):
    def test_devil_entries(self):
        entries = corpus.read_devil()
        self.assertGreater(len(entries), 950)
        self.assertTrue(entries[0].startswith("ABASEMENT, n. A decent and customary"))
        self.assertIn("LAWYER, n. One skilled in circumvention of the law.", entries)
        self.assertTrue(entries[-1].startswith("ZOOLOGY, n."))
        abdication = next(e for e in entries if e.startswith("ABDICATION"))
        self.assertEqual(abdication.split("\n")[1], "Poor Isabella's Dead, whose abdication")

    def test_missing_dictionary(self):
        with mock.patch.object(corpus, "DEVIL_DICT", "/nonexistent/devil.dict.dz"):
            with self.assertRaisesRegex(corpus.CorpusError, "/nonexistent/devil.dict.dz.*install Debian package dict-devil"):
                corpus.read_devil()

    def test_dictionary_without_entries(self):
        with tempfile.NamedTemporaryFile(suffix=".dz") as f:
            subprocess.run(["gzip", "-c"], input=b"no entries here\n", stdout=f, check=True)
            with mock.patch.object(corpus, "DEVIL_DICT", f.name):
                with self.assertRaisesRegex(corpus.CorpusError, "no dictionary entry found"):
                    corpus.read_devil()

    def test_missing_bible_program(self):
        with mock.patch("shutil.which", return_value=None), mock.patch.object(corpus, "_require"):
            with self.assertRaisesRegex(corpus.CorpusError, "install Debian package bible-kjv"):
                corpus.read_bible()

    def test_unexpected_bible_output(self):
        for output, error in [("  1 In the beginning\n", "verse before any chapter heading"),
                              ("Genesis 1\n  1 x\n???\n", "unexpected line '\\?\\?\\?'"),
                              ("Genesis 1\n  1 In the beginning\n", "expected 1189 chapters, got 1")]:
            done = subprocess.CompletedProcess([], 0, stdout=output)
            with mock.patch("shutil.which", return_value="/usr/bin/bible"), mock.patch.object(corpus, "_require"), \
                    mock.patch("subprocess.run", return_value=done):
                with self.assertRaisesRegex(corpus.CorpusError, error):
                    corpus.read_bible()

    @unittest.skipUnless(shutil.which("bible"), "needs Debian package bible-kjv")
    def test_split_holds_out_whole_documents(self):
        split = corpus.build(1234)
        self.assertEqual(len(split["train"]["bible"]) + len(split["validation"]["bible"]), 1189)
        self.assertTrue(split["train"]["bible"][0].startswith("Genesis 1\n1 In the beginning God created"))
        self.assertEqual(len(split["validation"]["bible"]), 30)
        train_text = "\n".join(d for docs in split["train"].values() for d in docs)
        for doc in split["validation"]["bible"] + split["validation"]["devil"]:
            self.assertFalse(doc in train_text, doc[:80])


class ModelTest(unittest.TestCase):
    def test_names_are_hugging_faces(self):
        names = set(LlamaForCausalLM(TINY).state_dict())
        expected = {"model.embed_tokens.weight", "model.norm.weight"}
        for i in range(2):
            expected |= {f"model.layers.{i}.{n}.weight" for n in [
                "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj", "input_layernorm", "post_attention_layernorm"]}
        self.assertEqual(names, expected)

    def test_causal(self):
        torch.manual_seed(0)
        model = LlamaForCausalLM(TINY).eval()
        ids = torch.randint(0, 300, (1, 10))
        changed = ids.clone()
        changed[0, 6:] = (changed[0, 6:] + 1) % 300
        with torch.no_grad():
            a, b = model(ids), model(changed)
        self.assertTrue(torch.allclose(a[0, :6], b[0, :6], atol=1e-6))
        self.assertFalse(torch.allclose(a[0, 6:], b[0, 6:], atol=1e-3))

    def test_rotary_matches_the_complex_form(self):
        """HF's rotate_half rotary: pair (i, i + d/2) turns by position * theta^(-2i/d)."""
        model = LlamaForCausalLM(TINY)
        d, pos = TINY.head_dim, 5
        x = torch.randn(d)
        rotated = x * model.rope_cos[pos] + torch.cat((-x[d // 2:], x[:d // 2])) * model.rope_sin[pos]
        angle = pos * TINY.rope_theta ** (-torch.arange(0, d, 2).float() / d)
        z = torch.complex(x[:d // 2], x[d // 2:]) * torch.polar(torch.ones(d // 2), angle)
        self.assertTrue(torch.allclose(rotated, torch.cat((z.real, z.imag)), atol=1e-5))

    def test_too_many_tokens(self):
        with self.assertRaisesRegex(ValueError, "17 tokens exceed max_position_embeddings 16"):
            LlamaForCausalLM(TINY)(torch.zeros(1, 17, dtype=torch.long))


class TrainingTest(unittest.TestCase):
    def test_learning_rate_schedule(self):
        """Warm-up to the peak, hold it, cosine decay to a tenth over the last quarter."""
        args = mock.Mock(lr=1.0, warmup=10, steps=200, decay_fraction=0.25)
        self.assertAlmostEqual(train.learning_rate(0, args), 0.1)
        self.assertAlmostEqual(train.learning_rate(10, args), 1.0)
        self.assertAlmostEqual(train.learning_rate(150, args), 1.0)
        self.assertAlmostEqual(train.learning_rate(175, args), 0.55)
        self.assertAlmostEqual(train.learning_rate(200, args), 0.1)
        self.assertAlmostEqual(train.learning_rate(250, args), 0.1)

    def test_windows_overlap_by_one_token(self):
        w = train.windows(torch.arange(10), 3)
        self.assertEqual(w.tolist(), [[0, 1, 2, 3], [3, 4, 5, 6], [6, 7, 8, 9]])

    def test_each_pass_repeats_documents_per_mix(self):
        docs = {"bible": [[1, 10, 2]], "devil": [[1, 20, 2]], "chat": [[1, 30, 2]]}
        data = train.TrainingData(docs, 11, 1, seed=0)  # one window holds a whole pass
        self.assertEqual(data.batches_per_pass, 1)
        for step in (0, 1):
            self.assertEqual(sorted(t for t in data.batch_at(step)[0].tolist() if t >= 10), [10, 20, 20, 30])

    def test_passes_differ_and_do_not_depend_on_history(self):
        docs = {"bible": [[1, 10 + i, 2] for i in range(20)], "devil": [], "chat": []}
        data = train.TrainingData(docs, 4, 3, seed=7)
        batches = [data.batch_at(step) for step in range(3 * data.batches_per_pass)]
        self.assertFalse(torch.equal(batches[0], batches[data.batches_per_pass]))
        fresh = train.TrainingData(docs, 4, 3, seed=7)
        self.assertTrue(torch.equal(fresh.batch_at(data.batches_per_pass + 1), batches[data.batches_per_pass + 1]))

    def run_training(self, work, out, *options):
        entries = corpus.read_devil()
        chats = [corpus.chat_text(f"Define {e.split(',')[0]}.", e) for e in entries[150:200]]
        split = {"train": {"bible": entries[:100], "devil": entries[100:150], "chat": chats},
                 "validation": {"bible": entries[200:210], "devil": entries[210:220], "chat": chats[:5]}}
        argv = ["train.py", "--work", work, "--out", out, "--vocab-size", "600", "--seq", "16", "--batch", "2",
                "--hidden-size", "32", "--intermediate-size", "48", "--layers", "2", "--heads", "4", "--kv-heads", "2",
                "--warmup", "2", "--decay-fraction", "0", "--eval-every", "1000", "--save-every", "1000", *options]
        with mock.patch.object(corpus, "build", return_value=split), mock.patch("sys.argv", argv), \
                mock.patch("builtins.print"):
            train.main()
        return sample.load(out)[0].state_dict()

    def test_a_resumed_run_equals_an_uninterrupted_one(self):
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            straight = self.run_training(a, os.path.join(a, "out"), "--steps", "6")
            self.run_training(b, os.path.join(b, "out"), "--steps", "4")
            # What a run stopped after its last save logged is dropped.
            with open(os.path.join(b, "out", "training_log.jsonl"), "a") as log:
                log.write(json.dumps({"step": 5, "train_loss": 9.0}) + "\n")
            resumed = self.run_training(b, os.path.join(b, "out"), "--steps", "6", "--resume")
            for name, p in straight.items():
                self.assertTrue(torch.equal(resumed[name], p), name)
            log = [json.loads(l) for l in Path(b, "out", "training_log.jsonl").read_text().splitlines()]
            self.assertEqual([r["step"] for r in log if "train_loss" in r], [1, 2, 3, 4, 5, 6])
            self.assertEqual([r["start_step"] for r in log if "args" in r], [0, 4])

    def test_resume_refuses_a_missing_state_or_another_shape(self):
        with tempfile.TemporaryDirectory() as work:
            with self.assertRaisesRegex(SystemExit, "--resume: no training state in"):
                self.run_training(work, os.path.join(work, "out"), "--steps", "1", "--resume")
            self.run_training(work, os.path.join(work, "out"), "--steps", "1")
            with self.assertRaisesRegex(SystemExit, "holds a model with .*'layers': 2.*pass the same options"):
                self.run_training(work, os.path.join(work, "out"), "--steps", "2", "--resume", "--layers", "3")

    def test_export_writes_a_loadable_checkpoint(self):
        with tempfile.TemporaryDirectory() as work, tempfile.TemporaryDirectory() as out:
            shutil.copyfile(os.path.join(CHECKPOINT, "tokenizer.json"), os.path.join(work, "tokenizer.json"))
            model = LlamaForCausalLM(LlamaConfig(max_position_embeddings=32))
            train.export(model, work, out)
            loaded, _ = sample.load(out)
            for name, p in model.state_dict().items():
                self.assertTrue(torch.allclose(loaded.state_dict()[name], p.half().float()), name)


class ShippedCheckpointTest(unittest.TestCase):
    """examples/kjv-devil-tiny: complete, within size, trained, with a working chat template."""

    @classmethod
    def setUpClass(cls):
        cls.model, cls.tok = sample.load(CHECKPOINT)
        cls.config = read_json(os.path.join(CHECKPOINT, "config.json"))

    def test_files_and_size(self):
        for name in ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "README.md"]:
            self.assertTrue(os.path.isfile(os.path.join(CHECKPOINT, name)), name)
        total = sum(os.path.getsize(os.path.join(CHECKPOINT, f)) for f in os.listdir(CHECKPOINT))
        self.assertLessEqual(total, 25 * 1024 * 1024)

    def test_config_matches_weights_and_tokenizer(self):
        self.assertEqual(self.config["model_type"], "llama")
        self.assertEqual(len(self.tok.vocab), self.config["vocab_size"])
        blob = Path(CHECKPOINT, "model.safetensors").read_bytes()
        header = json.loads(blob[8:8 + struct.unpack("<Q", blob[:8])[0]])
        self.assertEqual(header["model.layers.0.self_attn.k_proj.weight"]["shape"],
                         [self.config["num_key_value_heads"] * self.config["head_dim"], self.config["hidden_size"]])
        self.assertEqual({v["dtype"] for k, v in header.items() if k != "__metadata__"}, {"F16"})

    def held_out_loss(self, documents):
        """Mean nats per token over the documents, packed into 256-token
        windows as training evaluates them (train.windows)."""
        ids = torch.tensor([i for d in documents for i in [tokenizer.BOS_ID] + self.tok.encode(d) + [tokenizer.EOS_ID]])
        windows = train.windows(ids, self.config["max_position_embeddings"])
        with torch.no_grad():
            logits = self.model(windows[:, :-1])
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 windows[:, 1:].reshape(-1)).item()

    @unittest.skipUnless(shutil.which("bible"), "needs Debian package bible-kjv")
    def test_held_out_bible_chapters_cost_at_most_3_nats_a_token(self):
        chapters = [corpus.chapter_text(*c) for i, c in enumerate(corpus.read_bible()) if corpus.held_out(i)]
        self.assertLessEqual(self.held_out_loss(chapters), 3.0)

    def test_predicts_held_out_dictionary_entries(self):
        """Below the uniform ln(vocab) by 2 nats a token: the model has seen
        the dictionary's 940 training entries twenty times and knows its form
        far better than its held-out definitions (model card)."""
        held_out = [e for i, e in enumerate(corpus.read_devil()) if corpus.held_out(i)]
        self.assertLess(self.held_out_loss(held_out), math.log(self.config["vocab_size"]) - 2.0)

    def completions(self, prompt_ids, count):
        """Greedy, then `count` samples at the README's settings (temperature
        0.8, top_p 1, 48 tokens), seeds 0..count-1: the ids each adds."""
        outs = [sample.generate(self.model, prompt_ids, 48, 1.0, 1e-9, torch.Generator().manual_seed(0))]
        outs += [sample.generate(self.model, prompt_ids, 48, 0.8, 1.0, torch.Generator().manual_seed(seed))
                 for seed in range(count)]
        return [ids[len(prompt_ids):] for ids in outs]

    @unittest.skipUnless(shutil.which("bible"), "needs Debian package bible-kjv")
    def test_completions_are_real_words_without_chat_format(self):
        """The README's prompt: no chat role token, and >= 95% of the words
        (letters only) are words of the training text."""
        known = {w.lower() for doc in [corpus.chapter_text(*c) for c in corpus.read_bible()] + corpus.read_devil()
                 for w in re.findall(r"[A-Za-z]+", doc)}
        roles = {self.tok.vocab[s] for s in tokenizer.CHAT_SPECIALS}
        words = []
        for ids in self.completions([tokenizer.BOS_ID] + self.tok.encode("And it came to pass"), 10):
            self.assertFalse(roles & set(ids), self.tok.decode(ids))
            text = self.tok.decode(ids)
            self.assertNotIn("INST", text)
            words += re.findall(r"[A-Za-z]+", text)
        unknown = [w for w in words if w.lower() not in known]
        print(f"\n  {len(words) - len(unknown)} of {len(words)} words "
              f"({1 - len(unknown) / len(words):.1%}) are words of the training text; others: {unknown}")
        self.assertGreater(len(words), 200)
        self.assertLessEqual(len(unknown) / len(words), 0.05, unknown)

    def test_chat_answers_in_the_sources_form(self):
        """`Define WORD.` gets a dictionary entry (a headword, its part of
        speech, a definition); `Quote BOOK C:V.` a verse."""
        for word in ("LAWYER", "CYNIC", "PATIENCE"):
            prompt = self.tok.encode_with_specials(sample.render_chat(CHECKPOINT, [{"role": "user", "content": f"Define {word}."}]))
            for ids in self.completions(prompt, 2):
                answer = self.tok.decode(ids)
                self.assertRegex(answer, r"^[A-Z][A-Z' -]*, [a-z.]+ [A-Z]", answer)
        prompt = self.tok.encode_with_specials(sample.render_chat(CHECKPOINT, [{"role": "user", "content": "Quote John 3:16."}]))
        for ids in self.completions(prompt, 3):
            self.assertEqual(ids[-1], tokenizer.EOS_ID)
            self.assertRegex(self.tok.decode(ids), r"^[A-Z][^\n]{20,}[.?!;:,]$")

    def test_top_p_near_zero_is_greedy(self):
        prompt = [tokenizer.BOS_ID] + self.tok.encode("In the beginning")
        sampled = sample.generate(self.model, prompt, 8, 1.0, 1e-9, torch.Generator().manual_seed(0))
        greedy = list(prompt)
        with torch.no_grad():
            for _ in range(8):
                greedy.append(self.model(torch.tensor([greedy]))[0, -1].argmax().item())
        self.assertEqual(sampled, greedy)

    def test_generation_stops_at_the_context_length(self):
        prompt = [tokenizer.BOS_ID] + self.tok.encode("And it came to pass") * 40
        out = sample.generate(self.model, prompt[:250], 100, 0.8, 0.95, torch.Generator().manual_seed(0))
        self.assertLessEqual(len(out), self.config["max_position_embeddings"])

    def test_chat_template(self):
        turns = [{"role": "user", "content": "Define LAWYER."},
                 {"role": "assistant", "content": "LAWYER, n. One skilled."},
                 {"role": "user", "content": "Quote John 11:35."}]
        self.assertEqual(sample.render_chat(CHECKPOINT, turns[:1]), "<s><|user|>Define LAWYER.<|assistant|>")
        self.assertEqual(sample.render_chat(CHECKPOINT, turns),
                         "<s><|user|>Define LAWYER.<|assistant|>LAWYER, n. One skilled.</s>"
                         "<s><|user|>Quote John 11:35.<|assistant|>")
        with self.assertRaisesRegex(ValueError, "only the roles user, assistant and tool, not system"):
            sample.render_chat(CHECKPOINT, [{"role": "system", "content": "Be brief."}] + turns[:1])

    @unittest.skipUnless(os.path.isdir(os.path.join(NODE_MODULES, "tokenizers")) and shutil.which("node"),
                         "needs npm tokenizers in test/node/node_modules")
    def test_hugging_face_tokenizers_agree(self):
        texts = ["<s><|user|>Define LAWYER.<|assistant|>LAWYER, n. One skilled in circumvention of the law.</s>",
                 "Genesis 1\n1 In the beginning God created the heaven and the earth.", "naïve 日本  spaces"]
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "in.json").write_text(json.dumps(texts))
            subprocess.run(["node", os.path.join(HERE, "encode_hf.js"), os.path.join(CHECKPOINT, "tokenizer.json"),
                            os.path.join(tmp, "in.json"), os.path.join(tmp, "out.json")],
                           check=True, env={**os.environ, "NODE_PATH": os.path.abspath(NODE_MODULES)})
            reference = read_json(os.path.join(tmp, "out.json"))
        self.assertEqual([r["ids"] for r in reference], [self.tok.encode_with_specials(t) for t in texts])


if __name__ == "__main__":
    unittest.main()
