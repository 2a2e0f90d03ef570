"""Evaluation speed and chat latency (issue #14).

    python -m benchmarks.eval_speed [--rounds 120] [--samples 16] [--max-new-tokens 16] [--chat-messages 20]

(a) Samples/s of our evaluation path (``engines.inference.evaluation.evaluate_model``: the agent's generation loop,
    reply parsing, the reward) against a bare ``transformers`` script that only renders, batch-generates
    and decodes with identical settings (same model, prompts, batch size, greedy, max new tokens), in one
    process, alternating ABBA over ``--rounds`` rounds; the goal is ours/bare ≥ 0.95. The measure is the
    ratio of the two paths' samples/s over all rounds, with a 95 % bootstrap interval over the rounds;
    the generation's speed wanders from round to round, so many short rounds resolve more than a few
    long ones.
(b) Chat: time from a message sent to the first streamed token, the model already loaded, through the
    studio's own path (``aworld_gui.core.chat_client.ChatService`` → the chat process); the goal is p95 ≤ 0.5 s.
Results: benchmarks/results/eval_speed.json.
"""

from __future__ import annotations

from engines.core.modules import Modules

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.results_file import bootstrap_ci, pct, write_result

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"


def bare(model, tokenizer, conversations, max_new_tokens: int, batch_size: int) -> int:
    import torch

    tokenizer.padding_side = "left"
    done = 0
    for start in range(0, len(conversations), batch_size):
        texts = [
            tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=False)
            for c in conversations[start : start + batch_size]
        ]
        enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.no_grad():
            out = model.generate(
                **enc, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id
            )
        done += len(tokenizer.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True))
    return done


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=120)
    ap.add_argument("--samples", type=int, default=16, help="copies of each of the 16 test prompts")
    ap.add_argument("--max-new-tokens", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--chat-messages", type=int, default=20)
    a = ap.parse_args()

    from engines.agents.agent_spec import load_agent
    from engines.inference.checkpoints import ModelRef, load
    from engines.inputs.data import load_datasets, prompt_messages
    from engines.inference.evaluation import evaluate_model
    from engines.rewards import load_reward
    from engines.inference.rollout import AgentGenerator

    agent = load_agent(str(ASSETS / "agents/letters_agent.yaml"))
    bundle = load_datasets(str(ASSETS / "datasets/letters_test.jsonl"))
    rows = [bundle.train[i] for i in range(len(bundle.train))] * a.samples
    reward = load_reward(str(ASSETS / "rewards/letter_reward.py") + ":letter_reward")
    ref = ModelRef("base", agent.model, agent.model)
    model, tokenizer = load(ref, device="cpu")
    generator = AgentGenerator(model, tokenizer, [], None, agent.max_steps)
    conversations = [prompt_messages(r, bundle.columns, agent.system_prompt) for r in rows]

    def ours() -> int:
        return len(
            evaluate_model(
                ref,
                agent,
                rows,
                bundle.columns,
                reward,
                max_new_tokens=a.max_new_tokens,
                batch_size=a.batch_size,
                generator=generator,
            )
        )

    def theirs() -> int:
        return bare(model, tokenizer, conversations, a.max_new_tokens, a.batch_size)

    ours(), theirs()  # warm up both
    rounds: list[dict[str, tuple[int, float]]] = []  # per round: path -> (samples, seconds)
    for r in range(a.rounds):
        timed = {}
        for name in ("ours", "bare") if r % 2 == 0 else ("bare", "ours"):
            t0 = time.perf_counter()
            n = (ours if name == "ours" else theirs)()
            timed[name] = (n, time.perf_counter() - t0)
        rounds.append(timed)

    def ratio(sel: list[dict]) -> float:
        per_s = {k: sum(x[k][0] for x in sel) / sum(x[k][1] for x in sel) for k in ("ours", "bare")}
        return per_s["ours"] / per_s["bare"]

    rates = {k: [x[k][0] / x[k][1] for x in rounds] for k in ("ours", "bare")}
    ratios = [o / b for o, b in zip(rates["ours"], rates["bare"])]

    # (b) chat: time to the first streamed token, the model loaded
    from aworld_gui.core.chat_client import ChatService
    from engines.core.prepare import prepare_run

    with tempfile.TemporaryDirectory() as tmp:
        run = prepare_run(
            Modules(
                str(ASSETS / "agents/letters_agent.yaml"),
                str(ASSETS / "datasets/letters_train.jsonl"),
                None,
                str(ASSETS / "rewards/letter_reward.py") + ":letter_reward",
                {"max_steps": 1},
                train_engine_name="trl",
            ),
            runs_dir=tmp,
        )
        service = ChatService(tmp, idle_timeout_s=300)
        t0 = time.perf_counter()
        service.ensure(str(run.path), "base")
        load_s = time.perf_counter() - t0
        ttft = []
        try:
            for i in range(a.chat_messages):
                t0, first = time.perf_counter(), None
                for event in service.stream(
                    str(run.path), "base", [{"role": "user", "content": f"Say the letter {'ABCDEFGH'[i % 8]}:"}]
                ):
                    if first is None and event["type"] in ("token", "message"):
                        first = time.perf_counter() - t0
                ttft.append(first)
        finally:
            service.stop()

    summary = {
        "eval": {
            "samples_per_round": len(rows),
            "max_new_tokens": a.max_new_tokens,
            "batch_size": a.batch_size,
            "rounds": len(rounds),
            "samples_per_s_mean": {k: round(statistics.mean(v), 1) for k, v in rates.items()},
            "ratio": round(ratio(rounds), 4),
            "ratio_ci95": bootstrap_ci(rounds, ratio),
            "ratio_median_of_rounds": round(statistics.median(ratios), 3),
            "goal": ">= 0.95",
            "samples_per_s": {k: [round(x, 1) for x in v] for k, v in rates.items()},
            "ratio_per_round": [round(x, 3) for x in ratios],
        },
        "chat": {
            "load_s": round(load_s, 2),
            "messages": len(ttft),
            "ttft_p50_s": round(pct(ttft, 0.5), 3),
            "ttft_p95_s": round(pct(ttft, 0.95), 3),
            "goal": "p95 <= 0.5 s",
        },
    }
    path = write_result("eval_speed.json", summary)
    print(summary, "\n->", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
