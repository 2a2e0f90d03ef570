"""The probe's time forecast: the generation rate measured here, and from it and one timed training pass the time of
one step, of the whole run (``max_steps``) and to the first evaluation. Every figure says whether it was measured
here or extrapolated, and how; what cannot be known here (verl's rollouts and training on GPUs) is said, not
guessed."""

from __future__ import annotations

from typing import Any

MEASURED, EXTRAPOLATED, UNKNOWN = "measured", "extrapolated", "not known here"


def _item(what: str, seconds: float | None, basis: str, how: str) -> dict[str, Any]:
    return {"what": what, "seconds": None if seconds is None else round(seconds, 3), "basis": basis, "how": how}


def forecast(settings: dict[str, Any], timing: dict[str, Any], lengths: dict[str, Any]) -> dict[str, Any]:
    gen_s, tokens = float(timing.get("generate_seconds") or 0.0), int(timing.get("generated_tokens") or 0)
    rate = tokens / gen_s if gen_s > 0 else None
    per_completion = gen_s / max(1, int(timing.get("completions") or 0))
    items = [
        _item(
            "model load",
            timing.get("load_seconds"),
            MEASURED,
            "loading the base model here",
        ),
        _item(
            "generation rate (tokens/s)",
            rate,
            MEASURED,
            f"{tokens} tokens in {gen_s:.2f} s, {timing.get('completions')} completions in batches, on "
            f"{timing.get('device')} with {timing.get('threads')} thread(s), through "
            + ("the trl engine's generation" if settings["engine"] == "trl" else "this project's rollout"),
        ),
    ]
    out: dict[str, Any] = {"tokens_per_second": rate, "items": items}
    if settings["engine"] == "verl":
        out["note"] = (
            "verl generates with its own rollout workers (vLLM/SGLang) and trains with FSDP/Megatron on GPUs: nothing "
            "measured on this machine predicts its step time, so no step, run or evaluation time is forecast"
        )
        items.append(_item("one step", None, UNKNOWN, out["note"]))
        return out
    k = int(settings["num_generations"]) if settings.get("mode", "grpo") == "grpo" else 1
    prompts = int(settings.get("prompts_per_step") or 1)
    completions = prompts * k
    gen_step = per_completion * completions
    items.append(
        _item(
            "generation of one step",
            gen_step,
            EXTRAPOLATED,
            f"{completions} completions ({prompts} prompts × {k}) at the measured {per_completion:.4f} s per completion",
        )
    )
    step = gen_step
    tp = timing.get("training_pass")
    if tp:
        scale = completions / max(1, int(tp["sequences"]))
        train_s = float(tp["forward_backward_seconds"]) * scale
        items.append(
            _item(
                "forward and backward of one step",
                train_s,
                EXTRAPOLATED,
                f"one forward+backward measured on {tp['sequences']} sampled sequences "
                f"({tp['forward_backward_seconds']:.4f} s), scaled to the step's {completions}; no optimizer step",
            )
        )
        step += train_s
        if float(settings.get("beta") or 0.0) > 0:
            ref_s = float(tp["forward_seconds"]) * scale
            items.append(
                _item(
                    "reference model's forward (beta > 0)",
                    ref_s,
                    EXTRAPOLATED,
                    f"one forward without gradients measured on {tp['sequences']} sequences, scaled likewise",
                )
            )
            step += ref_s
    if settings["engine"] == "swift":
        out["note"] = (
            "ms-swift runs in its own environment; these figures are timed with this project's rollout and a "
            "forward/backward in this one, on the same model and machine"
        )
    items.append(_item("one step", step, EXTRAPOLATED, "the sum of the step's parts above"))
    out["step_seconds"] = step
    eval_steps, eval_samples = settings.get("eval_steps"), settings.get("eval_samples")
    eval_s = None
    if eval_steps and eval_samples:
        eval_s = per_completion * int(eval_samples)
        items.append(
            _item(
                "one evaluation",
                eval_s,
                EXTRAPOLATED,
                f"{eval_samples} greedy completions at the measured time per completion",
            )
        )
        out["first_evaluation_seconds"] = eval_steps * step + eval_s
        items.append(
            _item(
                "to the first evaluation",
                out["first_evaluation_seconds"],
                EXTRAPOLATED,
                f"{eval_steps} steps and one evaluation (model load and checks not included)",
            )
        )
    max_steps = settings.get("max_steps")
    if max_steps:
        evals = (int(max_steps) // int(eval_steps)) if eval_s is not None and eval_steps else 0
        out["run_seconds"] = int(max_steps) * step + evals * (eval_s or 0.0)
        items.append(
            _item(
                "the whole run",
                out["run_seconds"],
                EXTRAPOLATED,
                f"{max_steps} steps" + (f" and {evals} evaluations" if evals else "") + " (checkpoints not included)",
            )
        )
    return out
