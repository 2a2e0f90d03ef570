"""The reward bridge: verl's own loader (get_custom_reward_fn / load_extern_object) loads it from the run
dir and it scores exactly like the studio's reward — registry names, file.py:fn, callables, mixes."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from engines.rewards import load_reward
from engines.verl import VerlProcessor

ROOT = Path(__file__).resolve().parent.parent
LETTERS_AGENT = str(ROOT / "assets/agents/letters_agent.yaml")
LETTER_REWARD = f"{ROOT}/assets/rewards/letter_reward.py:letter_reward"
MODEL = ROOT / "assets/models/tiny-letters"
CASES = [("C", "C"), (" C", "C"), ("B", "C"), ("c", "C"), ("<answer>C</answer>", "C"), ("", "C"), ("7", "A")]


def prepared(tmp_path, reward, agent=LETTERS_AGENT, rows=None) -> VerlProcessor:
    rows = rows or [{"prompt": f"Say the letter {c}:", "answer": c, "difficulty": i} for i, c in enumerate("ABCD")]
    data = tmp_path / "letters.jsonl"
    tmp_path.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_json(data, orient="records", lines=True)
    p = VerlProcessor(str(tmp_path / "runs"))
    p.check_agent(agent)
    p.check_dataset(str(data))
    p.check_reward(reward)
    p.check_config({"batch_size": 4})
    return p


def verl_reward_fn(p: VerlProcessor):
    """What verl's reward loop does with the saved config."""
    from verl.trainer.ppo.reward import get_custom_reward_fn

    cfg = OmegaConf.load(p.config_path)
    assert cfg.reward.custom_reward_function.path == str(p.run.path / "verl" / "reward_bridge.py")
    fn = get_custom_reward_fn(cfg)
    assert fn is not None
    return fn


def call(fn, completion, answer, extra=None):
    return fn(
        data_source="letters",
        solution_str=completion,
        ground_truth=answer,
        extra_info=extra if extra is not None else {"index": 0, "split": "train"},
    )


@pytest.mark.parametrize(
    "spec",
    [
        "exact_match",
        LETTER_REWARD,
        [
            {"name": "exact_match", "weight": 1.0},
            {"ref": LETTER_REWARD, "weight": 0.5},
            {"name": "answer_format", "weight": 0.2},
        ],
    ],
    ids=["registry", "file", "mix"],
)
def test_verl_loads_the_bridge_and_scores_like_the_registry(tmp_path, spec):
    p = prepared(tmp_path, spec)
    fn = verl_reward_fn(p)
    studio = load_reward(spec)
    for completion, answer in CASES:
        total, parts = studio.score(completion, answer)
        out = call(fn, completion, answer)
        assert out["score"] == pytest.approx(total), (completion, answer)
        for name, value in parts.items():
            assert out[f"reward_{name}"] == pytest.approx(value)


def test_a_python_callable_is_pickled_into_the_run_dir(tmp_path):
    bonus = 0.25
    reward = lambda completion, answer, **kw: (1.0 if completion.strip() == answer else 0.0) + bonus  # noqa: E731
    p = prepared(tmp_path, reward)
    fn = verl_reward_fn(p)
    assert call(fn, "C", "C")["score"] == pytest.approx(1.25)
    assert call(fn, "B", "C")["score"] == pytest.approx(0.25)


def test_dataset_columns_and_verl_style_functions_reach_the_reward(tmp_path):
    src = tmp_path / "my_rewards.py"
    src.write_text(
        "def by_difficulty(completion, answer, difficulty=None, **kw):\n"
        "    return float(difficulty or 0) + (1.0 if completion.strip() == answer else 0.0)\n\n"
        "def verl_style(data_source, solution_str, ground_truth, extra_info=None, **kw):\n"
        "    return {'score': 0.5 if solution_str.strip() == ground_truth else 0.0, 'seen': data_source}\n"
    )
    spec = [{"ref": f"{src}:by_difficulty"}, {"ref": f"{src}:verl_style", "weight": 2.0}]
    p = prepared(tmp_path, spec)
    fn = verl_reward_fn(p)
    from engines.verl.dataset import read_rows

    row = read_rows(p.parquets["train"])[3]  # difficulty 3, answer D
    out = call(fn, "D", row["reward_model"]["ground_truth"], row["extra_info"])
    assert out["score"] == pytest.approx(3.0 + 1.0 + 2.0 * 0.5)


def test_the_bridge_loads_on_a_node_without_this_repository(tmp_path):
    """A copy of the run dir elsewhere (what Ray ships to another node), the user's reward file gone,
    an isolated interpreter (no repo on sys.path): verl's loader still gets the same scores."""
    user_file = tmp_path / "user_reward.py"
    user_file.write_text(
        "def shout(completion, answer, **kw):\n    return 2.0 if completion.strip() == answer else -1.0\n"
    )
    constant = lambda completion, answer, **kw: 0.1  # noqa: E731  no importable name → cloudpickle
    mix = [{"ref": f"{user_file}:shout", "weight": 1.0}, {"name": "exact_match", "weight": 0.5}, constant]
    p = prepared(tmp_path, mix)
    node = tmp_path / "node2" / "working_dir"
    shutil.copytree(p.run.path, node)
    user_file.unlink()
    shutil.rmtree(p.run.path)
    code = (
        "import json, sys\n"
        "sys.modules['engines'] = sys.modules['aworld_gui'] = None  # the repository is not on that node\n"
        "from verl.utils.import_utils import load_extern_object\n"
        f"fn = load_extern_object({str(node / 'verl' / 'reward_bridge.py')!r}, 'compute_score')\n"
        "print(json.dumps([fn(data_source='letters', solution_str=c, ground_truth='C', extra_info={'index': 0})"
        " for c in ('C', 'B')]))\n"
    )
    res = subprocess.run(
        [sys.executable, "-I", "-c", code], cwd=str(tmp_path), capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr[-3000:]
    good, bad = json.loads(res.stdout.strip().splitlines()[-1])
    assert good["score"] == pytest.approx(2.0 + 0.5 + 0.1)
    assert bad["score"] == pytest.approx(-1.0 + 0.0 + 0.1)


def test_with_tools_the_reward_sees_the_final_answer_not_the_tool_results(tmp_path):
    # tiny-calc: the tool schemas make the prompt longer than tiny-letters' 512 positions
    agent = {
        "name": "calc-agent",
        "model": str(ROOT / "assets/models/tiny-calc"),
        "system_prompt": "You are a calculator.",
        "max_steps": 3,
        "max_tokens": 48,
        "tools": [f"{ROOT}/assets/tools/calculator.py:add"],
    }
    rows = [{"prompt": "What is 3 + 4?", "answer": "7"}, {"prompt": "What is 1 + 1?", "answer": "2"}] * 2
    p = prepared(tmp_path, f"{ROOT}/assets/rewards/calc_reward.py:calc_reward", agent=agent, rows=rows)
    fn = verl_reward_fn(p)
    # verl's solution_str for the tool agent: the whole response (special tokens skipped)
    transcript = (
        '<tool_call>\n{"name": "add", "arguments": {"a": 3, "b": 4}}\n</tool_call>\n'
        "user\n<tool_response>\n7\n</tool_response>\nassistant\n"
    )
    assert call(fn, transcript + "The answer is 7.", "7")["score"] == 1.0
    assert call(fn, transcript + "The answer is 9.", "7")["score"] == 0.0  # the 7 of the tool result does not count
    assert call(fn, "The answer is 7.", "7")["score"] == 1.0  # no tool call


def test_no_reward_uses_verls_builtin_scorer_only_for_sources_it_knows(tmp_path):
    from engines.results.check_result import CheckError

    with pytest.raises(CheckError, match="no built-in scorer for data_source 'letters'"):
        prepared(tmp_path, None)
    rows = [{"prompt": "1+1?", "answer": "2", "data_source": "openai/gsm8k"}] * 4
    p = prepared(tmp_path / "gsm", None, rows=rows)
    cfg = OmegaConf.load(p.config_path)
    assert cfg.reward.custom_reward_function.path is None
    reward = next(r for r in p.check_results if r.module == "reward")
    assert reward.status == "warning"
