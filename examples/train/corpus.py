"""Builds the training documents from two public-domain texts Debian ships.

  King James Bible     package bible-kjv-text (/usr/lib/bible.data), read with
                       the `bible` program of package bible-kjv
  The Devil's Dictionary  package dict-devil (/usr/share/dictd/devil.dict.dz)

A document is one Bible chapter ("Genesis 1" then one numbered verse a line) or
one dictionary entry ("LAWYER, n.  One skilled ..."), plus single-turn chat
documents built from the training entries and verses, so the chat template has
something to answer. Every 40th chapter and every 40th entry is held out for
validation; no held-out text appears in any training document.
"""
import gzip
import random
import re
import shutil
import subprocess

BIBLE_DATA = "/usr/lib/bible.data"
DEVIL_DICT = "/usr/share/dictd/devil.dict.dz"
HOLD_OUT_EVERY = 40
HOLD_OUT_OFFSET = 7
CHAT_VERSES = 2000


class CorpusError(RuntimeError):
    pass


def _require(path, package, hint):
    try:
        open(path, "rb").close()
    except OSError as e:
        raise CorpusError(f"{path}: {e.strerror}; install Debian package {package} ({hint})") from e


def read_bible():
    """Returns [(book, chapter, [(verse, text)])] in canonical order."""
    _require(BIBLE_DATA, "bible-kjv-text", "apt-get install bible-kjv-text bible-kjv")
    if shutil.which("bible") is None:
        raise CorpusError("the `bible` program is missing; install Debian package bible-kjv "
                          "(apt-get install bible-kjv) to decode " + BIBLE_DATA)
    text = subprocess.run(["bible", "-l100000", "Genesis1:1-Revelation22:21"],
                          check=True, capture_output=True, text=True).stdout
    chapters = []
    heading = re.compile(r"^(.+) (\d+)$")
    verse = re.compile(r"^\s+(\d+) (.+)$")
    for line in text.splitlines():
        if not line.strip():
            continue
        v = verse.match(line)
        if v:
            if not chapters:
                raise CorpusError(f"bible output: verse before any chapter heading: {line!r}")
            chapters[-1][2].append((int(v.group(1)), " ".join(v.group(2).split())))
            continue
        h = heading.match(line)
        if not h:
            raise CorpusError(f"bible output: unexpected line {line!r}")
        chapters.append((h.group(1), int(h.group(2)), []))
    if len(chapters) != 1189:
        raise CorpusError(f"bible output: expected 1189 chapters, got {len(chapters)}")
    return chapters


def read_devil():
    """Returns the dictionary entries, each one string with '\\n' between lines.

    Prose paragraphs are unwrapped into one line; verse and attribution lines
    (indented in the source) keep their line breaks, without the indentation.
    """
    _require(DEVIL_DICT, "dict-devil", "apt-get install dict-devil")
    with gzip.open(DEVIL_DICT, "rt", encoding="utf-8") as f:
        lines = f.read().splitlines()
    # "LAWYER, n.  One skilled ...", also "T, the twentieth letter ..."; not "S.J., whose ..."
    headword = re.compile(r"^[A-Z]([A-Z' -]*[A-Z])?, [a-z.]+ ")
    start = next((i for i, l in enumerate(lines) if headword.match(l)), None)
    if start is None:
        raise CorpusError(f"{DEVIL_DICT}: no dictionary entry found")
    entries, paragraphs, prose = [], [], []

    def end_paragraph():
        if prose:
            paragraphs.append(" ".join(prose))
            prose.clear()

    def end_entry():
        end_paragraph()
        if paragraphs:
            entries.append("\n".join(paragraphs))
            paragraphs.clear()

    for line in lines[start:]:
        if line.strip() == "abcdefghijklmnopqrstuvwxyz":  # dictd's alphabet entry
            break
        if headword.match(line):
            end_entry()
        if not line.strip():
            end_paragraph()
        elif line.startswith(" "):
            end_paragraph()
            paragraphs.append(" ".join(line.split()))
        else:
            prose.append(" ".join(line.split()))
    end_entry()
    if len(entries) < 900:
        raise CorpusError(f"{DEVIL_DICT}: expected about 1000 entries, got {len(entries)}")
    return entries


def chapter_text(book, number, verses):
    return f"{book} {number}\n" + "\n".join(f"{n} {t}" for n, t in verses)


def chat_text(user, assistant):
    """The text between <s> and </s> that tokenizer_config.json's template
    renders; the roles are special tokens (tokenizer.CHAT_SPECIALS)."""
    return f"<|user|>{user}<|assistant|>{assistant}"


def held_out(index):
    return index % HOLD_OUT_EVERY == HOLD_OUT_OFFSET


def build(seed):
    """Returns {"train": {...}, "validation": {...}}, each {"bible", "devil", "chat"} lists of str."""
    chapters = read_bible()
    entries = read_devil()
    split = {name: {"bible": [], "devil": [], "chat": []} for name in ("train", "validation")}
    train_verses = []
    for i, (book, number, verses) in enumerate(chapters):
        part = "validation" if held_out(i) else "train"
        split[part]["bible"].append(chapter_text(book, number, verses))
        if part == "train":
            train_verses += [(f"{book} {number}:{n}", t) for n, t in verses]
    for i, entry in enumerate(entries):
        part = "validation" if held_out(i) else "train"
        split[part]["devil"].append(entry)
        word = entry.split(",", 1)[0]
        split[part]["chat"].append(chat_text(f"Define {word}.", entry))
    rng = random.Random(seed)
    for reference, verse in rng.sample(train_verses, CHAT_VERSES):
        split["train"]["chat"].append(chat_text(f"Quote {reference}.", verse))
    return split
