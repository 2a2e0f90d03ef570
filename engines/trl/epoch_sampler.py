"""GRPO's train sampler with an order that is a function of the seed and the epoch, so a resumed run trains on the
prompts an uninterrupted one would have.

TRL 1.16's ``RepeatSampler`` shuffles with one generator, seeded once, drawing the next permutation at each epoch:
a run resumed in its second epoch or later starts that generator afresh and trains on the first epoch's order again,
where the uninterrupted run had the next one (a two-process run of the letters demo, 3 steps an epoch, resumed at
step 5 trained steps 6–8 on the prompts of steps 3–5). Transformers does set the epoch on the data loader, but
Accelerate passes it on to no sampler behind the loader that skips a resumed epoch's first batches when several
processes train (``SkipBatchSampler`` over ``BatchSamplerShard``). So the sampler reads the epoch where the trainer
keeps it — its state's progress in epochs, restored from the checkpoint — when an epoch's iteration starts, and
seeds its generator with the run's seed plus that epoch. The first epoch's order is TRL's own.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from trl.trainer.utils import RepeatSampler


class EpochSeededRepeatSampler(RepeatSampler):
    """``RepeatSampler`` whose permutation in epoch ``e`` is drawn from a generator seeded with ``seed + e``;
    ``epoch_now`` says the trainer's progress in epochs (``TrainerState.epoch``: whole at an epoch's end)."""

    epoch_now: Callable[[], float | None]

    def __iter__(self):
        if self.shuffle:
            epoch = math.floor((self.epoch_now() or 0.0) + 1e-9)
            self.generator.manual_seed((self.seed or 0) + epoch)
        return super().__iter__()


def use_epoch_seeded_sampler(trainer: Any) -> None:
    """Make ``trainer`` (TRL's GRPOTrainer) build its train sampler as :class:`EpochSeededRepeatSampler`, with the
    arguments TRL gives its own, reading the epoch from ``trainer.state``."""
    build = trainer._get_train_sampler

    def epoch_seeded(dataset=None):
        sampler = build(dataset)
        sampler.__class__ = EpochSeededRepeatSampler
        sampler.epoch_now = lambda: trainer.state.epoch
        return sampler

    trainer._get_train_sampler = epoch_seeded
