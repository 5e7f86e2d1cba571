"""SentencePiece BPE tokenizer: training with Debian's spm_train, conversion to
a Hugging Face tokenizer.json in Llama 2's layout, and an encoder/decoder that
reads that tokenizer.json (used to tokenize the training data and the prompts,
so the model is trained on exactly the ids the serving runtime will produce).
"""
import json
import shutil
import subprocess

SPACE = "\u2581"  # SentencePiece's visible space
SPECIALS = ("<unk>", "<s>", "</s>")
UNK_ID, BOS_ID, EOS_ID = 0, 1, 2
# The chat roles are special tokens at the end of the vocabulary: plain text
# never encodes to them, so a completion prompt never looks like a chat.
CHAT_SPECIALS = ("<|user|>", "<|assistant|>")
ALL_SPECIALS = SPECIALS + CHAT_SPECIALS


class TokenizerError(RuntimeError):
    pass


def train_sentencepiece(text_file, model_prefix, vocab_size):
    """Trains model_prefix.model / .vocab on text_file, one sentence a line,
    leaving the last len(CHAT_SPECIALS) ids of vocab_size to the chat roles."""
    if shutil.which("spm_train") is None:
        raise TokenizerError("spm_train is missing; install Debian package sentencepiece")
    subprocess.run([
        "spm_train", f"--input={text_file}", f"--model_prefix={model_prefix}",
        "--model_type=bpe", f"--vocab_size={vocab_size - len(CHAT_SPECIALS)}", "--byte_fallback=true",
        "--character_coverage=1.0", "--split_digits=true",
        # Llama 2's settings: no Unicode normalization, spaces kept as written,
        # one visible space prepended to the text.
        "--normalization_rule_name=identity", "--remove_extra_whitespaces=false",
        "--add_dummy_prefix=true",
        "--unk_id=0", "--bos_id=1", "--eos_id=2", "--pad_id=-1",
        "--input_sentence_size=0", "--num_threads=1", "--minloglevel=1",
    ], check=True)


def export_vocab(model_file):
    """Returns [(piece, score)] in id order, read with spm_export_vocab, with
    the chat roles appended."""
    out = subprocess.run(["spm_export_vocab", f"--model={model_file}"],
                         check=True, capture_output=True, text=True).stdout
    pieces = []
    for n, line in enumerate(out.split("\n")[:-1]):
        fields = line.split("\t")
        if len(fields) != 2:
            raise TokenizerError(f"spm_export_vocab {model_file}: line {n + 1} is not 'piece<TAB>score': {line!r}")
        pieces.append((fields[0], float(fields[1])))
    if tuple(p for p, _ in pieces[:3]) != SPECIALS:
        raise TokenizerError(f"{model_file}: expected {SPECIALS} at ids 0-2, got {pieces[:3]}")
    clash = [p for p, _ in pieces if p in CHAT_SPECIALS]
    if clash:
        raise TokenizerError(f"{model_file}: the vocabulary already holds {clash}")
    return pieces + [(s, 0.0) for s in CHAT_SPECIALS]


def is_byte_piece(piece):
    return len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">")


def merges_from_vocab(pieces):
    """Derives BPE merges the way transformers' SentencePieceExtractor does:
    every split of a piece into two pieces of the vocabulary is a merge, ranked
    by the merged piece's score (higher first), ties by the parts' ids."""
    vocab = {p: i for i, (p, _) in enumerate(pieces)}
    merges = []
    for piece, score in pieces:
        if piece in ALL_SPECIALS or is_byte_piece(piece):
            continue
        local = [(piece[:k], piece[k:]) for k in range(1, len(piece))
                 if piece[:k] in vocab and piece[k:] in vocab]
        local.sort(key=lambda m: (vocab[m[0]], vocab[m[1]]))
        merges += [(score, left, right) for left, right in local]
    merges.sort(key=lambda m: -m[0])  # stable: keeps each piece's tie order
    return [(left, right) for _, left, right in merges]


def hf_tokenizer_json(pieces):
    """The tokenizer.json object, laid out like Llama 2's."""
    for piece, _ in pieces:
        if " " in piece:
            raise TokenizerError(f"piece {piece!r} contains a space; merges could not be written as 'a b'")
    vocab = {p: i for i, (p, _) in enumerate(pieces)}
    added = [{"id": vocab[s], "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for s in ALL_SPECIALS]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": SPACE},
            {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<s>", "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [BOS_ID], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SPACE}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": "<unk>",
            "continuing_subword_prefix": None, "end_of_word_suffix": None,
            "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
            "vocab": vocab,
            "merges": [f"{a} {b}" for a, b in merges_from_vocab(pieces)]},
    }


def convert(model_file, tokenizer_json):
    with open(tokenizer_json, "w", encoding="utf-8") as f:
        json.dump(hf_tokenizer_json(export_vocab(model_file)), f, ensure_ascii=False, indent=1)


class Tokenizer:
    """Encodes and decodes as the Hugging Face tokenizer.json written above does
    (Prepend/Replace normalizer, BPE by merge rank, byte fallback). Special
    tokens are never parsed out of text by encode: callers add <s> and </s> as
    ids, or use encode_with_specials."""

    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            model = json.load(f)["model"]
        self.vocab = model["vocab"]
        self.pieces = {i: p for p, i in self.vocab.items()}
        self.ranks = {tuple(m.split(" ")): r for r, m in enumerate(model["merges"])}
        self.cache = {}

    def encode(self, text):
        """Token ids of text (no <s>)."""
        normalized = SPACE + text.replace(" ", SPACE)
        ids = []
        # No merge crosses the start of a piece that begins with SPACE, nor a
        # character outside the vocabulary, so words can be encoded one by one.
        word = ""
        for ch in normalized:
            if ch == SPACE or ch not in self.vocab:
                ids += self._encode_word(word)
                word = ""
            if ch in self.vocab:
                word += ch
            else:
                ids += [self.vocab[f"<0x{b:02X}>"] for b in ch.encode("utf-8")]
        return ids + self._encode_word(word)

    def encode_with_specials(self, text):
        """Token ids of text in which <unk>, <s>, </s> and the chat roles are
        special tokens, as tokenizer.json's added_tokens make them (a rendered
        chat template); each piece between them is normalized on its own."""
        ids, start = [], 0
        while start < len(text):
            found = [(text.find(s, start), s) for s in ALL_SPECIALS if text.find(s, start) >= 0]
            at, special = min(found) if found else (len(text), None)
            if at > start:
                ids += self.encode(text[start:at])
            if special is None:
                break
            ids.append(self.vocab[special])
            start = at + len(special)
        return ids

    def _encode_word(self, word):
        if not word:
            return []
        if word not in self.cache:
            parts = list(word)
            while len(parts) > 1:
                rank, i = min((self.ranks.get((parts[i], parts[i + 1]), float("inf")), i)
                              for i in range(len(parts) - 1))
                if rank == float("inf"):
                    break
                parts[i:i + 2] = [parts[i] + parts[i + 1]]
            self.cache[word] = [self.vocab[p] for p in parts]
        return self.cache[word]

    def decode(self, ids):
        """Text of ids, as the tokenizer.json decoder gives it (specials skipped)."""
        out = bytearray()
        for i in ids:
            piece = self.pieces[i]
            if piece in ALL_SPECIALS:
                continue
            if is_byte_piece(piece):
                out.append(int(piece[3:5], 16))
            else:
                out += piece.replace(SPACE, " ").encode("utf-8")
        text = out.decode("utf-8", errors="replace")
        return text[1:] if text.startswith(" ") else text

