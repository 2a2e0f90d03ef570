"""A verl-format GSM8K-style parquet, built the way verl's ``examples/data_preprocess/gsm8k.py`` builds
its rows: ``data_source``, ``prompt`` (chat messages), ``ability``, ``reward_model.ground_truth``,
``extra_info`` (split, index, the worked answer, the question)."""

from __future__ import annotations

from pathlib import Path

INSTRUCTION = 'Let\'s think step by step and output the final answer after "####".'
PROBLEMS = [  # (question, worked answer, final answer)
    ("Tom has 3 apples and buys 4 more. How many apples does he have?", "3 + 4 = <<3+4=7>>7\n#### 7", "7"),
    ("A box holds 6 pens. How many pens are in 2 boxes?", "6 * 2 = <<6*2=12>>12\n#### 12", "12"),
    ("Sara had 10 stickers and gave away 3. How many are left?", "10 - 3 = <<10-3=7>>7\n#### 7", "7"),
    ("There are 5 cars with 4 wheels each. How many wheels?", "5 * 4 = <<5*4=20>>20\n#### 20", "20"),
    ("Ben reads 9 pages a day for 8 days. How many pages?", "9 * 8 = <<9*8=72>>72\n#### 72", "72"),
    ("A class of 30 splits into teams of 5. How many teams?", "30 / 5 = <<30/5=6>>6\n#### 6", "6"),
    ("Mia saves 15 dollars a week for 4 weeks. How much?", "15 * 4 = <<15*4=60>>60\n#### 60", "60"),
    ("A farm has 12 cows and 9 pigs. How many animals?", "12 + 9 = <<12+9=21>>21\n#### 21", "21"),
]


def gsm8k_rows(split: str = "train", data_source: str = "openai/gsm8k") -> list[dict]:
    return [
        {
            "data_source": data_source,
            "prompt": [{"role": "user", "content": f"{q} {INSTRUCTION}"}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": final},
            "extra_info": {"split": split, "index": i, "answer": worked, "question": q},
        }
        for i, (q, worked, final) in enumerate(PROBLEMS)
    ]


def write_gsm8k_parquet(path: str | Path, split: str = "train", data_source: str = "openai/gsm8k") -> str:
    import datasets

    datasets.Dataset.from_list(gsm8k_rows(split, data_source)).to_parquet(str(path))
    return str(path)
