"""The closing summary keeps measured figures only: the trainer's rates over the planned steps go."""

from engines.runs.run_summary import measured_summary


def test_the_summary_says_the_steps_done_and_their_rate_not_the_planned_ones():
    trl_logs = {
        "train_runtime": 35.7,
        "train_samples_per_second": 5.8,
        "train_steps_per_second": 1.455,
        "total_flos": 0.0,
        "train_loss": 0.12,
        "epoch": 0.2,
        "note": "text",
    }
    out = measured_summary(trl_logs, steps=10, seconds=35.7)
    assert out == {
        "train_runtime": 35.7,
        "total_flos": 0.0,
        "train_loss": 0.12,
        "epoch": 0.2,
        "steps": 10,
        "seconds": 35.7,
        "steps_per_second": 0.2801,
    }
    assert measured_summary({"train_runtime": 1.0}, steps=None, seconds=None) == {"train_runtime": 1.0}


def test_a_short_run_keeps_seconds_precise_enough_for_its_rate():
    # 3 steps in 0.1522 s: seconds rounded to 0.15 made the pair read 20 steps/s beside a rate of 19.71
    out = measured_summary({}, steps=3, seconds=0.1522)
    assert out == {"steps": 3, "seconds": 0.152, "steps_per_second": 19.7109}
    assert abs(out["seconds"] * out["steps_per_second"] - out["steps"]) < 0.01
