"""Rewards: built-ins, file.py:fn, module:fn, callables, weighted mixes; the TRL/verl adapter; the dry run."""

from __future__ import annotations

import math
import textwrap

import datasets
import pytest

from engines import BUILTIN_REWARDS, CheckError, load_reward
from engines.inputs.data import load_datasets
from engines.rewards import RewardError, dry_run_reward

USER_REWARDS = """
import math

def per_sample(completion: str, answer: str, **kwargs) -> float:
    return 1.0 if completion.strip() == answer else 0.0

def uses_columns(response, ground_truth, level=0):
    return float(response == ground_truth) + 0.5 * level

def trl_style(prompts, completions, solution, **kwargs):
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]  # chat or text prompts
    return [float(t == s) for t, s in zip(texts, solution)]

def verl_style(data_source, solution_str, ground_truth, extra_info=None):
    return {"score": float(solution_str == ground_truth), "source": data_source}

def raises(completion, answer, **kwargs):
    return 1.0 / 0

def returns_nan(completion, answer, **kwargs):
    return math.nan

def returns_text(completion, answer, **kwargs):
    return "1.0"

def returns_inf(completion, answer, **kwargs):
    return math.inf

def returns_none(completion, answer, **kwargs):
    return None

def takes_nothing():
    return 1.0

def trl_reads_kwargs(prompts, completions, **kwargs):
    return [float(c[0]["content"] == s) for c, s in zip(completions, kwargs["solution"])]

def wrong_length(prompts, completions, **kwargs):
    return [1.0, 1.0]

NOT_CALLABLE = 3
"""


@pytest.fixture
def rewards_file(tmp_path):
    path = tmp_path / "my_rewards.py"
    path.write_text(USER_REWARDS)
    return str(path)


@pytest.fixture
def bundle(tmp_path):
    rows = [{"question": f"{i} + {i} =", "solution": str(2 * i), "level": i % 2} for i in range(5)]
    datasets.Dataset.from_list(rows).to_json(str(tmp_path / "d.jsonl"))
    return load_datasets(str(tmp_path / "d.jsonl"))


# -- built-ins ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, completion, answer, expected",
    [
        ("exact_match", "<answer> Paris. </answer>", "paris", 1.0),
        ("exact_match", "Lyon", "Paris", 0.0),
        ("math_match", "so the total is \\boxed{1/2}", "0.5", 1.0),
        ("math_match", "the answer is 1,234", "1234", 1.0),
        ("math_match", "<answer>12</answer>", "13", 0.0),
        ("contains", "I think it is PARIS indeed", "Paris", 1.0),
        ("contains", "London", "Paris", 0.0),
        ("regex", "order #A-123", r"A-\d+", 1.0),
        ("regex", "order #B", r"A-\d+", 0.0),
        ("token_f1", "<answer>the big cat</answer>", "big cat", 0.8),
        ("token_f1", "dog", "big cat", 0.0),
        ("answer_format", "thinking... <answer>42</answer>", None, 1.0),
        ("answer_format", "<answer>1</answer><answer>2</answer>", None, 0.0),
        ("length_penalty", "x" * 100, None, 0.0),
        ("length_penalty", "x" * 300, None, -0.5),
        ("length_penalty", "x" * 1000, None, -1.0),
    ],
    ids=lambda v: v[:16] if isinstance(v, str) else str(v),
)
def test_builtins(name, completion, answer, expected):
    reward = load_reward(name)
    total, parts = reward.score(completion, answer)
    assert total == pytest.approx(expected) and parts == {name: pytest.approx(expected)}
    assert f"{parts[name]:.2f}" == f"{expected:.2f}"  # no "-0.00" in reports


def test_builtin_registry_covers_the_spec():
    assert set(BUILTIN_REWARDS) == {
        "exact_match",
        "math_match",
        "contains",
        "regex",
        "token_f1",
        "answer_format",
        "length_penalty",
    }


def test_builtin_kwargs_and_none_answers():
    reward = load_reward({"name": "regex", "kwargs": {"pattern": r"^\d+$"}})
    assert reward.score("42", None)[0] == 1.0
    reward = load_reward({"name": "length_penalty", "kwargs": {"target_chars": 10}})
    assert reward.score("x" * 15, None)[0] == -0.5
    for name in ("exact_match", "math_match", "contains", "token_f1"):
        assert load_reward(name).score("anything", None)[0] == 0.0


# -- user functions and mixes -----------------------------------------------------------------------
def test_file_module_and_callable_references(rewards_file, tmp_path, monkeypatch):
    r = load_reward(f"{rewards_file}:per_sample")
    assert r.score(" 4 ", "4")[0] == 1.0 and r.terms[0].ref == f"{rewards_file}:per_sample"
    # relative file.py:fn resolves against the working directory
    monkeypatch.chdir(tmp_path)
    assert load_reward("my_rewards.py:per_sample").score("4", "4")[0] == 1.0
    monkeypatch.syspath_prepend(str(tmp_path))
    r = load_reward("my_rewards:uses_columns")
    assert r.terms[0].ref == "my_rewards:uses_columns"
    assert r.score("4", "4", None, level=1)[0] == 1.5
    r = load_reward(lambda completion, answer: float(len(completion) == len(answer)))
    assert r.score("ab", "cd")[0] == 1.0 and r.terms[0].ref is None


def test_weighted_mix(rewards_file):
    r = load_reward(
        [
            {"name": "exact_match", "weight": 2},
            {"ref": f"{rewards_file}:per_sample", "weight": 0.5},
            "answer_format",
            "exact_match",
        ]
    )
    assert r.names == ["exact_match_1", "per_sample", "answer_format", "exact_match_2"]
    assert r.weights == [2.0, 0.5, 1.0, 1.0]
    total, parts = r.score("<answer>7</answer>", "7")
    assert parts == {"exact_match_1": 1.0, "per_sample": 0.0, "answer_format": 1.0, "exact_match_2": 1.0}
    assert total == 4.0
    assert load_reward({"mix": ["contains", "exact_match"]}).names == ["contains", "exact_match"]
    assert r.to_spec()[0] == {"name": "exact_match", "weight": 2.0}


def test_one_adapter_batch_wise_and_per_sample(rewards_file):
    """The same reward gives the same values through TRL's batch call and verl's per-sample call."""
    r = load_reward(
        [
            {"name": "exact_match", "weight": 2.0},
            f"{rewards_file}:uses_columns",
            f"{rewards_file}:trl_style",
            f"{rewards_file}:verl_style",
        ]
    )
    assert [t.style for t in r.terms] == ["sample", "sample", "batch", "verl"]
    completions = ["4", "5", "6"]
    answers, levels = ["4", "4", "6"], [1, 0, 0]

    # as the trl engine calls it: chat prompts and completions, the reference in its own column, the
    # dataset's columns kept
    trl = r.trl_functions(answer_key="_ref_answer")
    assert [f.__name__ for f in trl] == r.names
    prompts = [[{"role": "user", "content": f"p{i}"}] for i in range(3)]
    chat = [[{"role": "assistant", "content": c}] for c in completions]
    batch = [
        f(
            prompts=prompts,
            completions=chat,
            _ref_answer=answers,
            solution=answers,
            level=levels,
            trainer_state=object(),
        )
        for f in trl
    ]
    assert batch == [[1.0, 0.0, 1.0], [1.5, 0.0, 1.0], [1.0, 0.0, 1.0], [1.0, 0.0, 1.0]]

    for i, completion in enumerate(completions):
        out = r.verl_compute_score("arith", completion, answers[i], {"index": i}, level=levels[i])
        weighted = sum(w * batch[t][i] for t, w in enumerate(r.weights))
        assert out["score"] == pytest.approx(weighted)
        assert [out[f"reward_{n}"] for n in r.names] == [batch[t][i] for t in range(len(r.names))]


def test_conversational_completions_are_read_as_their_last_assistant_message():
    chat = [
        {"role": "assistant", "content": "<tool_call>...</tool_call>"},
        {"role": "tool", "content": "6"},
        {"role": "assistant", "content": "<answer>6</answer>"},
    ]
    r = load_reward(["exact_match", "answer_format"])
    assert r.score(chat, "6") == (2.0, {"exact_match": 1.0, "answer_format": 1.0})
    (em, _) = r.trl_functions("_ref_answer")
    assert em(prompts=[[{"role": "user", "content": "3+3"}]], completions=[chat], _ref_answer=["6"]) == [1.0]


def test_dry_run_reports_reference_and_wrong_scores(rewards_file, bundle):
    r = load_reward([f"{rewards_file}:trl_style", {"name": "exact_match", "weight": 0.5}])
    result = dry_run_reward(r, bundle)
    assert result.status == "ok" and result.module == "reward"
    assert result.message == (
        "trl_style×1, exact_match×0.5; dry run on 3 row(s): reference → 1.50, 1.50, 1.50; wrong → 0.00, 0.00, 0.00"
    )
    rows = result.details["dry_run"]
    assert [row["answer"] for row in rows] == ["0", "2", "4"]
    for row in rows:
        assert row["reference"]["completion"] == row["answer"]
        assert row["wrong"]["completion"] != row["answer"]
        for side in ("reference", "wrong"):
            values = [row[side]["total"], *row[side]["terms"].values()]
            assert all(isinstance(v, float) and math.isfinite(v) for v in values)
    assert result.details["terms"][1] == {"name": "exact_match", "weight": 0.5}


def test_the_dry_run_passes_every_dataset_column_as_training_does(rewards_file, bundle):
    # TRL hands a reward all dataset columns, the reference answer's included
    result = dry_run_reward(load_reward(f"{rewards_file}:trl_reads_kwargs"), bundle)
    assert [row["reference"]["total"] for row in result.details["dry_run"]] == [1.0, 1.0, 1.0]


def test_dry_run_warns_when_the_reward_cannot_tell_right_from_wrong(bundle):
    result = dry_run_reward(load_reward(lambda completion, answer: 1.0), bundle)
    assert result.status == "warning"
    assert "does not score the reference answer above a wrong one" in result.warnings[0]


# -- bad rewards --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fn, what, fix",
    [
        (
            "raises",
            "reward function 'raises' raised ZeroDivisionError: float division by zero (dry run on line 1 of d.jsonl",
            "fix the function so it handles this input",
        ),
        (
            "returns_nan",
            "reward 'returns_nan' returned nan; rewards must be finite",
            "guard divisions and logs so the function never returns NaN",
        ),
        ("returns_inf", "reward 'returns_inf' returned inf; rewards must be finite", "never returns NaN or infinity"),
        (
            "returns_text",
            "reward 'returns_text' returned '1.0' (str); a reward must return a number",
            "return a float (e.g. 1.0 or 0.0)",
        ),
        ("returns_none", "returned None (NoneType); a reward must return a number", "return a float"),
        ("wrong_length", "must return a list with one value per completion", None),
    ],
)
def test_bad_reward_values_fail_the_dry_run(rewards_file, bundle, fn, what, fix):
    reward = load_reward(f"{rewards_file}:{fn}")  # loading is fine; the dry run catches it
    with pytest.raises(CheckError) as err:
        dry_run_reward(reward, bundle)
    assert isinstance(err.value, ValueError) and err.value.result.module == "reward"
    assert what in str(err.value)
    if fix:
        assert fix in str(err.value)


def test_a_raising_reward_during_training_is_a_reward_error(rewards_file):
    reward = load_reward(f"{rewards_file}:raises")
    with pytest.raises(RewardError, match="reward function 'raises' raised ZeroDivisionError"):
        reward.score("x", "y")
    (fn,) = reward.trl_functions("answer")
    with pytest.raises(RewardError, match="raised ZeroDivisionError"):
        fn(prompts=["p"], completions=["x"], answer=["y"])


@pytest.mark.parametrize(
    "spec, what, fix",
    [
        ("exact_mach", "unknown reward 'exact_mach' (did you mean \"exact_match\"?)", "built-ins: exact_match"),
        ("{file}:missing", "has no attribute 'missing'", None),
        ("{file}:NOT_CALLABLE", "is not callable", "point at a function"),
        (
            "{file}:takes_nothing",
            "reward 'takes_nothing' takes no arguments",
            "def reward(completion, answer, **kwargs) -> float",
        ),
        ("/no/such/rewards.py:fn", "does not exist", None),
        ("no_such_module_xyz:fn", "cannot import module 'no_such_module_xyz'", None),
        (None, "no reward function given", "pick a built-in"),
        ([], "no reward function given", "pick a built-in"),
        (42, "reward 42 must be a built-in name, 'file.py:function', 'module:function' or a callable", None),
        ({"name": "exact_match", "weight": "heavy"}, "reward weight 'heavy' is not a number", None),
        ({"weight": 1}, "a reward entry needs `name` (built-in), `ref`", None),
    ],
)
def test_bad_reward_specs(rewards_file, spec, what, fix):
    if isinstance(spec, str):
        spec = spec.format(file=rewards_file)
    with pytest.raises(CheckError) as err:
        load_reward(spec)
    assert what in str(err.value)
    if fix:
        assert fix in str(err.value)


def test_a_reward_file_that_fails_to_import(tmp_path):
    (tmp_path / "bad.py").write_text(
        textwrap.dedent("""
        def f(completion, answer):
            return 1.0
        raise ImportError("needs a package that is not installed")
    """)
    )
    with pytest.raises(CheckError) as err:
        load_reward(f"{tmp_path / 'bad.py'}:f")
    assert "importing" in str(err.value) and "needs a package that is not installed" in str(err.value)


def test_lambda_rewards_are_pickled_into_the_run_spec(tmp_path):
    r = load_reward([lambda completion, answer: 0.25, "contains"])
    with pytest.raises(CheckError, match="define it at module level"):
        r.to_spec()
    spec = r.to_spec(pickle_dir=tmp_path)
    again = load_reward(spec)
    assert again.score("Paris!", "paris") == (1.25, {"<lambda>": 0.25, "contains": 1.0})


# -- calling conventions: async, None, verl dicts, verl batched ----------------------------------------
CONVENTIONS = """
import asyncio

async def async_trl(prompts, completions, **kwargs):
    await asyncio.sleep(0)
    return [1.0 if c[0]["content"] == "4" else 0.0 for c in completions]

async def async_sample(completion, answer):
    await asyncio.sleep(0)
    return float(completion == answer)

def only_some(prompts, completions, level, **kwargs):
    return [None if lv == 0 else 1.0 for lv in level]

def verl_dict(solution_str, ground_truth):
    return {"score": 2.0 if solution_str == ground_truth else -1.0, "acc": solution_str == ground_truth}

def verl_batched(data_sources, solution_strs, ground_truths, extra_infos):
    return [float(s == g) for s, g in zip(solution_strs, ground_truths)]

def logs(prompts, completions, log_extra=None, log_metric=None, **kwargs):
    log_extra("seen", [c[0]["content"] for c in completions])
    log_metric("calls", 1.0)
    return [0.5] * len(completions)
"""


@pytest.fixture
def conventions(tmp_path):
    path = tmp_path / "conventions.py"
    path.write_text(CONVENTIONS)
    return str(path)


def test_async_none_verl_dicts_and_verl_batches_are_read_as_their_frameworks_do(conventions):
    r = load_reward(
        [f"{conventions}:{n}" for n in ("async_trl", "async_sample", "only_some", "verl_dict", "verl_batched")]
    )
    assert [t.style for t in r.terms] == ["batch", "sample", "batch", "verl", "verl_batch"]
    prompts = [[{"role": "user", "content": "2+2"}]] * 2
    chat = [[{"role": "assistant", "content": c}] for c in ("4", "5")]
    values = [
        f(prompts=prompts, completions=chat, _ref_answer=["4", "4"], level=[0, 1])
        for f in r.trl_functions("_ref_answer")
    ]
    # None = "does not apply" (TRL makes it NaN and leaves it out of the weighted sum)
    assert values == [[1.0, 0.0], [1.0, 0.0], [None, 1.0], [2.0, -1.0], [1.0, 0.0]]
    total, parts = r.score("4", "4", prompts[0], level=0)
    assert parts["only_some"] is None and total == 1.0 + 1.0 + 2.0 + 1.0
    out = r.verl_compute_score("arith", "5", "4", {"index": 0}, level=0)
    assert out["score"] == 0.0 + 0.0 - 1.0 + 0.0 and out["reward_only_some"] == 0.0


def test_async_rewards_work_inside_a_running_event_loop(conventions):
    import asyncio

    r = load_reward(f"{conventions}:async_trl")

    async def inside():  # verl's reward loop calls compute_score from a coroutine's executor or loop
        return r.verl_compute_score("arith", "4", "4", None)

    assert asyncio.run(inside())["score"] == 1.0


def test_log_extra_and_log_metric_reach_trl_and_the_dry_run(conventions, bundle):
    r = load_reward(f"{conventions}:logs")
    seen: dict = {}
    (fn,) = r.trl_functions(None)
    fn(
        prompts=[[{"role": "user", "content": "q"}]],
        completions=[[{"role": "assistant", "content": "a"}]],
        log_extra=lambda k, v: seen.__setitem__(k, v),
        log_metric=lambda k, v: seen.__setitem__(k, v),
    )
    assert seen == {"seen": ["a"], "calls": 1.0}
    result = dry_run_reward(r, bundle)
    assert set(result.details["calls"]["logs"]["logged"]) == {"log_extra seen", "log_metric calls"}


@pytest.mark.parametrize(
    "spec", ["swift:accuracy", {"ref": "swift:accuracy", "weight": 0.5}, ["exact_match", "swift:accuracy"]]
)
def test_ms_swifts_own_rewards_are_refused_off_the_swift_engine_with_a_counterpart(spec):
    with pytest.raises(CheckError) as err:
        load_reward(spec)
    assert err.value.module == "reward"
    assert "'swift:accuracy' is one of ms-swift's own rewards: it runs only on the swift engine" in str(err.value)
    assert "trl.rewards:accuracy_reward" in err.value.hint


def test_the_swift_engine_splits_ms_swifts_rewards_from_ours():
    from engines.rewards.native import split_native

    ours = ["exact_match", {"ref": "my.py:fn", "weight": 2}]
    assert split_native(ours) == (ours, [])
    assert split_native("swift:format") == ([], [("format", "swift:format")])
    rest, natives = split_native({"mix": ["exact_match", {"ref": "swift:format", "weight": 0.5}]})
    assert rest == ["exact_match"] and natives == [("format", {"ref": "swift:format", "weight": 0.5})]
