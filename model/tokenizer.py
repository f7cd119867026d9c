"""The tokenizer: a vocabulary derived from the instruction table and the grammar.

Whole-word tokens for everything the language defines (instruction names,
parameter names, sections, directives, explanation kinds, reserved words,
storage scopes, thread axes, dtypes), the punctuation of the grammar with the
spacing the canonical form writes (`, `, ` = `), the words of the workload
rendering (`render.py`), the annotation keys MetaSchedule writes, and every
printable ASCII character as a fallback, so any ASCII text round-trips exactly:
`decode(encode(s)) == s`. Digits are single tokens, so numbers and variable
names (`l12` = `l`, `1`, `2`) are spelled, never unknown.

The pre-tokenizer is one regular expression (longest known word first, then one
character); the model is `WordLevel` and the decoder concatenates, which keeps
the vocabulary readable as plain strings: the constrained decoder hands it to
xgrammar as a RAW vocabulary.
"""

from __future__ import annotations

import re
import string
from pathlib import Path

from dragon_dsl.language import table

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
# Prompt structure: <s> <workload> rendering <script> script </s>; improvement prompts put the
# slower script after <improve> and before <script>.
WORKLOAD, IMPROVE, SCRIPT = "<workload>", "<improve>", "<script>"
SPECIAL = (PAD, BOS, EOS, UNK, WORKLOAD, IMPROVE, SCRIPT)

#: Words of the workload rendering (render.py).
RENDER_WORDS = (
    "target",
    "buffer",
    "block",
    "iters",
    "reads",
    "writes",
    "init",
    "param",
    "alloc",
    "llvm",
    "cuda",
    "root",
    "main",
)
#: Punctuation as the canonical form spaces it, and the grammar's operators.
PUNCTUATION = (
    ", ",
    " = ",
    "=",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ": ",
    ":",
    "//",
    "\n",
    "\n\n",
    " ",
    '"',
    "lambda ",
    "+",
    "-",
    "*",
    "%",
    ".",
)


#: the compact vocabulary (`build_tokenizer(compact=True)`) also spells as one token each the names
#: TVM derives for results (kind prefix + counter: blocks b, loops l, values v) and the integers a
#: schedule writes most (0..2048 and the dimensions of real models): the CUDA corpus' scripts take
#: 1.56x fewer tokens than spelled digit by digit, and generation time falls with the token count
COMPACT_NAMES = {"b": 96, "l": 512, "v": 192}
COMPACT_INTEGERS = tuple(range(2049)) + (
    2560,
    3072,
    4096,
    5120,
    6144,
    8192,
    10240,
    11008,
    12288,
    13824,
    14336,
    16384,
    32000,
    32064,
    50257,
    65536,
    128256,
    151936,
)


def compact_words() -> list[str]:
    names = [f"{prefix}{i}" for prefix, n in COMPACT_NAMES.items() for i in range(n)]
    return names + [str(i) for i in COMPACT_INTEGERS if i >= 10]


def vocabulary_words(compact: bool = False) -> list[str]:
    """Every multi-character word of the vocabulary, from the table (and the fixed lists above)."""
    words: set[str] = set(compact_words()) if compact else set()
    for inst in table.INSTRUCTIONS:
        if inst.section:
            words.add(inst.section)
            words.add(inst.section + ":")
        else:
            words.add(inst.name)
            words.add(inst.name + "(")
        for p in inst.params:
            words.add(p.name)
            words.add(p.name + "=")
    words |= set(table.DIRECTIVES)
    words |= set(table.EXPLAIN_KINDS)
    words |= set(table.RESERVED)
    words |= set(table.STORAGE_SCOPES) | set(table.THREAD_AXES) | set(table.DTYPES)
    # the annotation keys that are one token (the table marks them: the vocabulary is fixed with the weights)
    words |= {a.key for a in table.ANNOTATION_KEYS if a.vocabulary} | set(RENDER_WORDS)
    words |= {"True", "False", "None", "decision="}
    words |= {p for p in PUNCTUATION if len(p) > 1}
    return sorted(w for w in words if len(w) > 1)


def characters() -> list[str]:
    return sorted(set(string.printable) - set("\x0b\x0c\r"))


def pretokenize_pattern(words: list[str]) -> str:
    """The longest vocabulary word at each position, else one character. The words form a trie
    (`(?:a(?:b)?|c)`: a shared prefix is matched once, a longer word is tried before a shorter
    one that it extends), which splits exactly as the alternation of every word, longest first,
    and 15-20x faster: with 3,000 words the plain alternation is tried word by word at every
    character (tokenizing the CUDA pretraining rows took minutes). Tokenizers saved before carry
    the alternation in their tokenizer.json; the ids are the same."""
    trie: dict = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def pattern(node: dict) -> str:
        branches = [re.escape(ch) + pattern(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return pattern(trie) + r"|\n|."


def build_tokenizer(compact: bool = False):
    """A `PreTrainedTokenizerFast` for Dragon (deterministic: same table, same ids). The shipped
    weights of the first generation use the spelled vocabulary (compact=False); each model folder
    carries its own tokenizer.json, so either loads with its weights."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = vocabulary_words(compact)
    vocab: dict[str, int] = {}
    for tok in list(SPECIAL) + characters() + words:
        vocab.setdefault(tok, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(pretokenize_pattern(words)), behavior="isolated")
    tok.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=EOS,
        unk_token=UNK,
        pad_token=PAD,
        additional_special_tokens=[WORKLOAD, IMPROVE, SCRIPT],
        clean_up_tokenization_spaces=False,
    )
    fast.model_input_names = ["input_ids", "attention_mask"]
    return fast


def load_tokenizer(path):
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    path = Path(path)
    if (path / "tokenizer.json").exists():
        try:
            return PreTrainedTokenizerFast.from_pretrained(str(path))
        except (OSError, ValueError):
            pass
    return AutoTokenizer.from_pretrained(str(path))


def is_dragon_tokenizer(tokenizer) -> bool:
    vocab = tokenizer.get_vocab()  # a copy of the whole vocabulary: asked once
    return all(t in vocab for t in (WORKLOAD, SCRIPT, IMPROVE))


def token_strings(tokenizer) -> list[str]:
    """The text of every token id (for grammar masks): special tokens map to ''."""
    vocab = tokenizer.get_vocab()
    size = max(len(tokenizer), max(vocab.values()) + 1)
    out = [""] * size
    specials = set(tokenizer.all_special_tokens)
    # asked once: get_vocab copies the whole vocabulary (asked per token, 8.5 s of a CUDA model's
    # 26 s load on one core)
    raw = is_dragon_tokenizer(tokenizer)
    for text, i in vocab.items():
        if text in specials:
            continue
        out[i] = text if raw else tokenizer.decode([i], clean_up_tokenization_spaces=False)
    return out
