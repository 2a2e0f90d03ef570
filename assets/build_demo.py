#!/usr/bin/env python
"""Rebuild the shipped demo assets from scratch (deterministic, CPU, < 3 minutes on 2 cores).

    python assets/build_demo.py                 # everything
    python assets/build_demo.py --only letters  # tiny-letters model + letters datasets
    python assets/build_demo.py --only calc     # tiny-calc model (with a short supervised warm start) + calc datasets
    python assets/build_demo.py --only trained  # tiny-letters-trained: tiny-letters after the demo's 300 GRPO steps

What it writes (paths relative to this folder):

* ``datasets/letters_{train,test}.jsonl``, ``datasets/letters_train.csv`` -- rows ``{"prompt": "Say the letter C:", "answer": "C"}``.
  The system prompt is not in the data: it comes from ``agents/letters_agent.yaml``.
* ``models/tiny-letters`` -- a random-init Qwen2ForCausalLM (2 layers x 64 wide, 84k parameters) and a word-level
  byte-BPE tokenizer (full printable-ASCII alphabet, a capital letter is always its own token) with TRL's Qwen2.5 chat
  template (``trl/chat_templates/qwen2_5.jinja``, copied verbatim, tool-capable). GRPO teaches it the letters task in
  ~30 s on 2 CPU cores (see ``benchmarks/bare_trl_grpo.py``).
* ``models/tiny-letters-trained`` -- ``tiny-letters`` trained by this project's own ``trl`` engine for 300 GRPO steps of
  ``configs/letters_grpo.yaml`` (``engines/core/shipped_demo.py``), with ``training/``: that run's spec, status, metrics,
  events and samples. Evaluate, Chat and Export work on it before anything has trained (the studio offers it as a run).
* ``datasets/calc_{train,test}.jsonl`` -- rows ``{"prompt": "What is 3 + 4?", "answer": "7"}``.
* ``models/tiny-calc`` -- a Qwen2ForCausalLM (3 layers x 64 wide) with a byte-BPE tokenizer (digits always single
  tokens) trained on the fully rendered tool-calling conversations, then given a short supervised warm start (~800
  steps) so that, with the ``add`` tool in the prompt and the system prompt of ``agents/calc_agent.yaml``, it emits
  ``<tool_call>\n{"name": "add", "arguments": {"a": 3, "b": 4}}\n</tool_call>`` and, after the tool result, answers
  "The answer is 7.". It was trained with exactly that system prompt and tool list: change them and it degrades.

Every tokenizer is checked to round-trip every rendered prompt and answer, to reload (AutoTokenizer) into an identical
tokenizer, and to pass TRL's tool-calling template checks; tiny-calc must pass a held-out tool-use check. The build
fails loudly otherwise.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import re
import shutil
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers  # noqa: E402
from transformers import (  # noqa: E402
    GenerationConfig,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
)
from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX as QWEN2_PRETOKENIZE_REGEX  # noqa: E402
from transformers.models.qwen2.tokenization_qwen2 import Qwen2Tokenizer  # noqa: E402
from transformers.utils.chat_template_utils import render_jinja_template  # noqa: E402

HERE = Path(__file__).resolve().parent
DATASETS = HERE / "datasets"
MODELS = HERE / "models"
SEED = 1234

# TRL ships this template; its tool-calling support (response parsing, prefix-preservation checks) keys on the exact
# text, so it is copied verbatim.
import trl  # noqa: E402

QWEN25_TEMPLATE = (Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja").read_text(encoding="utf-8")

# Special tokens: the chat-control tokens are "special" (dropped by decode(skip_special_tokens=True)); the tool tags
# are added tokens that never split but survive decoding, as in the real Qwen2.5 tokenizer, so a parser can see them.
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TOOL_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]
ALL_ADDED = SPECIAL_TOKENS + TOOL_TOKENS
_ADDED_RE = re.compile("|".join(re.escape(t) for t in ALL_ADDED))

# ---------------------------------------------------------------------------------------------------------------------
# Letters task
# ---------------------------------------------------------------------------------------------------------------------
LETTERS_SYSTEM = "Reply with one capital letter."
LETTERS = "ABCDEFGH"
LETTERS_TRAIN_PHRASES = ["Say the letter {}:", "Write the letter {}:", "Type {}:"]
LETTERS_TEST_PHRASES = ["Print the letter {}:", "Show the letter {}:"]  # held out: never seen in training
# 64 wide: reward 0.8 after ~180-230 GRPO steps, every seed tried. 128 wide got there in ~105 steps for some seeds but
# collapsed onto a fixed wrong letter for others (all 16 samples of a group equal -> no gradient) at lr 1e-3.
LETTERS_HIDDEN, LETTERS_LAYERS = 64, 2

# ---------------------------------------------------------------------------------------------------------------------
# Calculator (tool-use) task
# ---------------------------------------------------------------------------------------------------------------------
CALC_SYSTEM = "You are a calculator. Use the add tool."
CALC_QUESTION = "What is {} + {}?"
CALC_VOCAB = 400  # byte-BPE merges shrink the ~600-character tool prompt; digits stay single tokens
# Supervised warm start of tiny-calc. Learning to copy the digits (question -> tool arguments, tool result -> answer)
# is a sudden "phase change" whose timing depends on the seed; 3 layers and a 5x loss weight on digit tokens made it
# happen within ~300-600 steps for most seeds (2 layers / no weighting: often not within 1500 steps).
CALC_SEED = 1234  # a seed whose warm start passes the held-out check below (the build fails loudly otherwise)
CALC_HIDDEN, CALC_LAYERS = 64, 3
CALC_SFT_STEPS, CALC_SFT_BATCH, CALC_SFT_LR, CALC_DIGIT_WEIGHT = 800, 16, 3e-3, 5.0


def log(msg: str) -> None:
    print(f"[build_demo] {msg}", flush=True)


def set_seed(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


# ---------------------------------------------------------------------------------------------------------------------
# Tokenizer helpers
# ---------------------------------------------------------------------------------------------------------------------
def render(messages, tools=None, add_generation_prompt=False) -> str:
    out = render_jinja_template(
        conversations=[messages],
        tools=tools,
        chat_template=QWEN25_TEMPLATE,
        add_generation_prompt=add_generation_prompt,
    )
    rendered = out[0] if isinstance(out, tuple) else out
    return rendered[0] if isinstance(rendered, list) else rendered


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable-unicode map (what the ByteLevel pre-tokenizer uses)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def _corpus_alphabet(corpus: list[str], extra: str) -> list[str]:
    b2u = _bytes_to_unicode()
    chars = set("".join(_ADDED_RE.sub("", t) for t in corpus) + extra)
    return sorted({b2u[b] for c in chars for b in c.encode("utf-8")})


def _byte_alphabet() -> list[str]:
    """Printable ASCII + newline + tab, in ByteLevel's byte->unicode mapping: any plain-ASCII text round-trips."""
    mapping = pre_tokenizers.ByteLevel.alphabet()  # all 256 mapped chars, unordered
    b2u = _bytes_to_unicode()
    wanted = [b2u[b] for b in list(range(32, 127)) + [9, 10]]
    assert all(c in mapping for c in wanted)
    return wanted


def build_tokenizer(
    corpus: list[str],
    vocab_size: int,
    max_len: int,
    alphabet: str = "ascii",
    extra_chars: str = "",
    forbid_merge: str | None = None,
) -> Qwen2Tokenizer:
    """Byte-level BPE trained on ``corpus`` (fully rendered chat text), saved as a ``Qwen2Tokenizer``.

    Gotcha (transformers 5): ``AutoTokenizer`` always loads a ``model_type: qwen2`` checkpoint as ``Qwen2Tokenizer``,
    which rebuilds the pipeline from vocab+merges with Qwen's own pre-tokenizer (word/digit regex split + ByteLevel)
    and NFC normalizer, whatever ``tokenizer.json`` says. So the merges are trained with exactly that pipeline, and the
    reloaded tokenizer is checked to encode exactly like this one.

    ``vocab_size`` <= alphabet size gives a character-level tokenizer; larger lets BPE merge words (never across words,
    and digits always stay single tokens). ``forbid_merge``: regex of merged tokens to drop (e.g. " C").
    ``alphabet``: "ascii" = all printable ASCII + newline + tab (any ASCII text round-trips), "corpus" = only the
    characters of the corpus and ``extra_chars``.
    """
    tok = Tokenizer(models.BPE())  # no unk token: unseen characters would vanish, hence the round-trip checks
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    # Train on the text between added tokens (those never reach the BPE model).
    pieces = [p for text in corpus for p in _ADDED_RE.split(text) if p]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=_byte_alphabet() if alphabet == "ascii" else _corpus_alphabet(corpus, extra_chars),
        show_progress=False,
    )
    tok.train_from_iterator(pieces, trainer)
    model = json.loads(tok.to_str())["model"]
    vocab, merges = model["vocab"], [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    if forbid_merge:
        bad = {t for t in vocab if t not in SPECIAL_TOKENS and len(t) > 1 and re.fullmatch(forbid_merge, t)}
        merges = [m for m in merges if m[0] + m[1] not in bad]
        kept = sorted((i, t) for t, i in vocab.items() if t not in bad)
        vocab = {t: n for n, (_, t) in enumerate(kept)}
    hf = Qwen2Tokenizer(
        vocab=vocab,
        merges=merges,
        unk_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
        model_max_length=max_len,
        clean_up_tokenization_spaces=False,
    )
    hf.add_special_tokens({"additional_special_tokens": ["<|im_start|>"]})
    hf.add_tokens([AddedToken(t, special=False, normalized=False) for t in TOOL_TOKENS])
    hf.chat_template = QWEN25_TEMPLATE
    for t in ALL_ADDED:
        ids = hf.encode(t, add_special_tokens=False)
        if len(ids) != 1:
            raise SystemExit(f"FATAL: added token {t!r} does not encode to one id: {ids}")
    return hf


def check_round_trip(tok: PreTrainedTokenizerFast, texts: list[str], what: str) -> None:
    for text in texts:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        back = tok.decode(ids, skip_special_tokens=False)
        if back != text:
            raise SystemExit(f"FATAL: tokenizer for {what} does not round-trip:\n  text: {text!r}\n  back: {back!r}")


def check_saved_tokenizer(path: Path, texts: list[str], what: str, built=None):
    from transformers import AutoTokenizer
    from trl.chat_template_utils import is_chat_template_prefix_preserving, supports_tool_calling

    tok = AutoTokenizer.from_pretrained(path)
    check_round_trip(tok, texts, what + " (reloaded)")
    if built is not None:
        for text in texts:
            if tok(text)["input_ids"] != built(text)["input_ids"]:
                raise SystemExit(
                    f"FATAL: {what}: reloaded tokenizer ({type(tok).__name__}) encodes differently: {text!r}"
                )
    for t in ALL_ADDED:
        if len(tok.encode(t, add_special_tokens=False)) != 1:
            raise SystemExit(f"FATAL: {what}: added token {t!r} is not a single id after reload")
    if tok.chat_template != QWEN25_TEMPLATE:
        raise SystemExit(f"FATAL: {what}: saved chat template differs from TRL's qwen2_5.jinja")
    if not supports_tool_calling(tok):
        raise SystemExit(f"FATAL: {what}: TRL says the chat template does not support tool calling")
    if not is_chat_template_prefix_preserving(tok):
        raise SystemExit(f"FATAL: {what}: chat template is not prefix-preserving with this tokenizer")
    if tok.padding_side != "left" or tok.eos_token != "<|im_end|>" or tok.pad_token != "<|endoftext|>":
        raise SystemExit(f"FATAL: {what}: special tokens/padding not as expected")
    return tok


def write_splits(stem: str, train: list[dict], test: list[dict]) -> tuple[list[dict], list[dict]]:
    write_jsonl(DATASETS / f"{stem}_train.jsonl", train)
    write_jsonl(DATASETS / f"{stem}_test.jsonl", test)
    return train, test


def ship_model(model, tok, name: str, texts: list[str]) -> tuple[Path, int]:
    """Save under assets/models/<name>, check the reloaded tokenizer; returns the path and the parameter count."""
    path = MODELS / name
    save_model(model, tok, path)
    check_saved_tokenizer(path, texts, name, built=tok)
    return path, sum(p.numel() for p in model.parameters())


def make_model(tok, hidden: int, layers: int, heads: int, kv_heads: int, inter: int, max_pos: int, seed: int):
    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=inter,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=max_pos,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        use_cache=True,
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, bos_token_id=None
    )
    return model


def save_model(model, tok, path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    model.save_pretrained(path, safe_serialization=True)
    tok.save_pretrained(path)
    for f in path.iterdir():
        f.chmod(0o644)


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def write_csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


# ---------------------------------------------------------------------------------------------------------------------
# Letters
# ---------------------------------------------------------------------------------------------------------------------
def letters_rows():
    train = [{"prompt": p.format(c), "answer": c} for p in LETTERS_TRAIN_PHRASES for c in LETTERS]
    test = [{"prompt": p.format(c), "answer": c} for p in LETTERS_TEST_PHRASES for c in LETTERS]
    return train, test


def build_letters() -> None:
    t0 = time.time()
    set_seed(SEED)
    train, test = write_splits("letters", *letters_rows())
    write_csv(DATASETS / "letters_train.csv", train)

    def texts_of(rows):
        out = []
        for r in rows:
            msgs = [{"role": "system", "content": LETTERS_SYSTEM}, {"role": "user", "content": r["prompt"]}]
            out.append(render(msgs, add_generation_prompt=True) + r["answer"] + "<|im_end|>")
        return out

    texts = texts_of(train + test)
    # Word-level byte-BPE (merges learned on the training prompts only) over the full printable-ASCII alphabet:
    # prompts are ~24 tokens instead of ~78 characters (3x faster GRPO steps), any ASCII text round-trips, and a
    # capital letter never merges with the space before it, so " C" in the prompt holds the same "C" token the answer
    # needs.
    tok = build_tokenizer(
        texts_of(train),
        vocab_size=1000,
        max_len=512,
        alphabet="ascii",
        forbid_merge=r"Ġ[A-Z]",
    )
    check_round_trip(tok, texts + [r["prompt"] for r in train + test] + list(LETTERS), "tiny-letters")
    n_prompt = len(tok(texts[0], add_special_tokens=False)["input_ids"])
    model = make_model(
        tok,
        hidden=LETTERS_HIDDEN,
        layers=LETTERS_LAYERS,
        heads=4,
        kv_heads=2,
        inter=2 * LETTERS_HIDDEN,
        max_pos=512,
        seed=SEED,
    )
    path, nparams = ship_model(model, tok, "tiny-letters", texts)
    log(
        f"letters: {len(train)} train / {len(test)} test rows, vocab {len(tok)}, "
        f"~{n_prompt} tokens per prompt+answer, {nparams} params -> {path} ({time.time() - t0:.1f}s)"
    )


# ---------------------------------------------------------------------------------------------------------------------
# Calculator (tool use)
# ---------------------------------------------------------------------------------------------------------------------
def calc_rows():
    pairs = [(a, b) for a in range(10) for b in range(10)]
    rng = random.Random(SEED)
    rng.shuffle(pairs)
    test_pairs, train_pairs = sorted(pairs[:20]), sorted(pairs[20:])
    row = lambda a, b: {"prompt": CALC_QUESTION.format(a, b), "answer": str(a + b)}  # noqa: E731
    return [row(a, b) for a, b in train_pairs], [row(a, b) for a, b in test_pairs]


def _load_tool(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location("calculator", HERE / "tools" / "calculator.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def calc_tool_call_text(a: int, b: int) -> str:
    """What the assistant emits after '<|im_start|>assistant\\n' (same text the chat template renders)."""
    args = json.dumps({"a": a, "b": b})
    return '<tool_call>\n{"name": "add", "arguments": ' + args + "}\n</tool_call><|im_end|>"


def calc_answer_text(total: int) -> str:
    return f"The answer is {total}.<|im_end|>"


def tool_suffix_ids(tok, tool_content: str) -> list[int]:
    """Token ids TRL inserts after a tool call: the tool-result turn + the next assistant header.

    Mirrors ``GRPOTrainer._get_tool_suffix_ids`` (render a dummy conversation with and without the tool message, keep
    the difference after the last EOS).
    """
    dummy = [
        {"role": "user", "content": "dummy"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "add", "arguments": {}}}],
        },
    ]
    prefix = tok.apply_chat_template(dummy, tokenize=True, return_dict=False)
    full = tok.apply_chat_template(
        dummy + [{"role": "tool", "name": "add", "content": tool_content}],
        tokenize=True,
        return_dict=False,
        add_generation_prompt=True,
    )
    last_eos = max(i for i, t in enumerate(prefix) if t == tok.eos_token_id)
    prefix = prefix[: last_eos + 1]
    assert full[: len(prefix)] == prefix
    return full[len(prefix) :]


def calc_messages(question: str) -> list[dict]:
    return [{"role": "system", "content": CALC_SYSTEM}, {"role": "user", "content": question}]


def calc_sequence(tok, tools, a: int, b: int):
    """(input_ids, loss_mask) of one full rollout, built by concatenating ids exactly as TRL's tool loop does."""
    prompt = tok.apply_chat_template(
        calc_messages(CALC_QUESTION.format(a, b)),
        tools=tools,
        add_generation_prompt=True,
        tokenize=True,
        return_dict=False,
    )
    call = tok.encode(calc_tool_call_text(a, b), add_special_tokens=False)
    suffix = tool_suffix_ids(tok, str(a + b))
    answer = tok.encode(calc_answer_text(a + b), add_special_tokens=False)
    ids = prompt + call + suffix + answer
    mask = [0] * len(prompt) + [1] * len(call) + [0] * len(suffix) + [1] * len(answer)
    return ids, mask, len(prompt)


@torch.no_grad()
def calc_rollout(model, tok, tools, question: str, max_new: int = 64):
    """Greedy two-turn rollout (tool call -> tool result -> answer), like TRL's loop. Returns (call_json, answer_text)."""
    prompt = tok.apply_chat_template(
        calc_messages(question), tools=tools, add_generation_prompt=True, tokenize=True, return_dict=False
    )
    ids = torch.tensor([prompt])
    out = model.generate(ids, max_new_tokens=max_new, do_sample=False)[0, len(prompt) :].tolist()
    text = tok.decode(out)
    m = re.search(r"<tool_call>\s*(.+?)\s*</tool_call>", text, re.S)
    if not m:
        return None, text
    try:
        call = json.loads(m.group(1))
        result = tools[0](**call["arguments"]) if call.get("name") == "add" else None
    except Exception:
        return None, text
    seq = prompt + out + tool_suffix_ids(tok, str(result))
    out2 = model.generate(torch.tensor([seq]), max_new_tokens=max_new, do_sample=False)[0, len(seq) :].tolist()
    return call, tok.decode(out2, skip_special_tokens=True)


def sft_warm_start(model, tok, seqs, steps: int, batch: int, lr: float, digit_weight: float, seed: int) -> None:
    """Supervised training on (ids, loss_mask, prompt_len) sequences that share a common prefix."""
    from transformers import DynamicCache

    ids0 = [x[0] for x in seqs]
    pl = 0
    while all(len(i) > pl + 1 and i[pl] == ids0[0][pl] for i in ids0):
        pl += 1
    assert not any(m for x in seqs for m in x[1][:pl]), "loss mask must not cover the shared prefix"
    prefix = torch.tensor([ids0[0][:pl]])
    pad = tok.pad_token_id
    width = max(len(i) for i in ids0) - pl
    all_ids = torch.tensor([x[0][pl:] + [pad] * (width + pl - len(x[0])) for x in seqs])
    all_mask = torch.tensor([x[1][pl:] + [0] * (width + pl - len(x[1])) for x in seqs], dtype=torch.bool)
    all_att = torch.tensor([[1] * len(x[0]) + [0] * (width + pl - len(x[0])) for x in seqs])
    positions = torch.arange(pl, pl + width).unsqueeze(0).expand(batch, -1)

    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    # 20 warm-up steps, constant, linear decay to 0 over the last 20%
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 20, (steps - s) / (0.2 * steps)))
    digits = torch.tensor([tok.convert_tokens_to_ids(str(d)) for d in range(10)])
    model.train()
    t0 = time.time()
    for step in range(steps):
        idx = torch.randint(0, len(seqs), (batch,), generator=g)
        ids, mask, att = all_ids[idx], all_mask[idx], all_att[idx]
        pre = model(input_ids=prefix, use_cache=True)
        cache = DynamicCache(
            ddp_cache_data=[
                (layer.keys.expand(batch, -1, -1, -1), layer.values.expand(batch, -1, -1, -1))
                for layer in pre.past_key_values.layers
            ],
            config=model.config,
        )
        out = model(input_ids=ids, attention_mask=att, past_key_values=cache, position_ids=positions)
        # logits predicting suffix token j: from the prefix's last position (j=0), else suffix position j-1
        logits = torch.cat([pre.logits[:, -1:].expand(batch, -1, -1), out.logits[:, :-1]], dim=1)
        weight = torch.where(torch.isin(ids, digits), digit_weight, 1.0) * mask
        per_token = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.size(-1)), ids.reshape(-1), reduction="none"
        )
        loss = (per_token * weight.reshape(-1)).sum() / weight.sum()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 100 == 0 or step == steps - 1:
            log(f"calc SFT step {step:4d} loss {loss.item():.4f} ({time.time() - t0:.0f}s)")
    model.eval()


def build_calc() -> None:
    t0 = time.time()
    set_seed(SEED)
    train, test = write_splits("calc", *calc_rows())
    add = _load_tool("add")
    tools = [add]

    pairs = [(a, b) for a in range(10) for b in range(10)]
    texts = []
    for a, b in pairs:
        msgs = calc_messages(CALC_QUESTION.format(a, b))
        texts.append(
            render(msgs, tools=tools, add_generation_prompt=True)
            + calc_tool_call_text(a, b)
            + "\n<|im_start|>user\n<tool_response>\n"
            + str(a + b)
            + "\n</tool_response><|im_end|>\n"
            + "<|im_start|>assistant\n"
            + calc_answer_text(a + b)
        )
    tok = build_tokenizer(texts, vocab_size=CALC_VOCAB, max_len=1024, alphabet="ascii")
    check_round_trip(tok, texts + [r["prompt"] for r in train + test], "tiny-calc")

    train_pairs = [tuple(int(x) for x in re.findall(r"\d+", r["prompt"])) for r in train]
    test_pairs = [tuple(int(x) for x in re.findall(r"\d+", r["prompt"])) for r in test]
    seqs = [calc_sequence(tok, tools, a, b) for a, b in train_pairs]
    n_prompt = seqs[0][2]
    n_completion = len(seqs[0][0]) - n_prompt
    # The digit-copying "phase change" of the warm start is seed dependent: if the held-out check fails (e.g. other
    # torch numerics), retry deterministically with the next seeds before failing.
    n = len(test)
    for _attempt, seed in enumerate(range(CALC_SEED, CALC_SEED + 3)):
        model = make_model(
            tok,
            hidden=CALC_HIDDEN,
            layers=CALC_LAYERS,
            heads=4,
            kv_heads=2,
            inter=2 * CALC_HIDDEN,
            max_pos=1024,
            seed=seed,
        )
        # Short supervised warm start on the assistant tokens of full rollouts (fixed number of steps: deterministic).
        # Every rollout starts with the same system+tools prefix (~195 tokens): it is run once per step at batch size 1
        # and its KV cache is shared by the batch -- exact gradients, ~4x less compute than padding whole sequences.
        t_sft = time.time()
        sft_warm_start(
            model,
            tok,
            seqs,
            steps=CALC_SFT_STEPS,
            batch=CALC_SFT_BATCH,
            lr=CALC_SFT_LR,
            digit_weight=CALC_DIGIT_WEIGHT,
            seed=seed,
        )
        sft_s = time.time() - t_sft
        # Greedy check on held-out questions: well-formed tool call, right arguments, right final answer.
        calls = args_ok = answers_ok = 0
        for (a, b), r in zip(test_pairs, test):
            call, answer = calc_rollout(model, tok, tools, r["prompt"])
            calls += call is not None
            args_ok += call is not None and call.get("arguments") == {"a": a, "b": b}
            answers_ok += r["answer"] in re.findall(r"-?\d+", answer)
        log(
            f"calc seed {seed}: SFT {CALC_SFT_STEPS} steps in {sft_s:.0f}s; held-out greedy: tool call {calls}/{n}, "
            f"right args {args_ok}/{n}, right answer {answers_ok}/{n}"
        )
        if calls >= 0.9 * n and answers_ok >= 0.8 * n:
            break
    else:
        raise SystemExit(
            f"FATAL: tiny-calc warm start failed the held-out check for seeds {CALC_SEED}..{CALC_SEED + 2}"
        )

    path, nparams = ship_model(model, tok, "tiny-calc", texts)
    log(
        f"calc: {len(train)} train / {n} test rows, vocab {len(tok)}, prompt {n_prompt} + completion {n_completion} "
        f"tokens, {nparams} params -> {path} ({time.time() - t0:.0f}s)"
    )


def build_trained() -> None:
    """models/tiny-letters-trained: the letters demo trained by this project's own engine from models/tiny-letters
    (engines/core/shipped_demo.py), with the record of that run beside it."""
    import sys
    import tempfile

    sys.path.insert(0, str(HERE.parent))
    from engines.core import shipped_demo

    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        run = shipped_demo.train(Path(tmp) / "runs")
        path = shipped_demo.ship(run)
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    log(f"trained: {shipped_demo.STEPS} steps -> {path} ({size // 1024} KB, {time.time() - t0:.0f}s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["letters", "calc", "trained"], default=None)
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    t0 = time.time()
    if args.only in (None, "letters"):
        build_letters()
    if args.only in (None, "calc"):
        build_calc()
    if args.only in (None, "trained"):  # after letters: it trains models/tiny-letters
        build_trained()
    log(f"done in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
