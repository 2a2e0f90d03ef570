"""The Setup's files: agent, dataset and reward uploads, a test set kept only with its own train set, and the
rewards offered in the picker (a reward file's functions are read in the check worker, never in the studio)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr

from ..core import inputs as inp
from ..core.studio import Studio
from ..rendering.i18n import _
from ..worker.check_worker import WorkerError
from . import reward_card
from .setup_inputs import AUTO, NONE, NONE_CHOICE, table_rows


class SetupFiles:
    """The handlers of the Setup's file pickers and uploads (wired in SetupTab.wire)."""

    def __init__(self, studio: Studio):
        self.studio = studio

    def reward_registry(self, extra_files: list[str] | None = None) -> dict[str, tuple[str, str]]:
        """{key: (label, description)}: built-ins, the ecosystem's rewards (catalog), then the functions of
        shipped and extra reward files."""
        docs = reward_card.registry(self.studio.catalog())
        for path in [*inp.shipped_reward_files(), *(extra_files or [])]:
            try:
                for fn in self.studio.reward_functions(path):
                    docs[fn["ref"]] = (inp.reward_label(fn["ref"]), fn.get("doc", ""))
            except WorkerError:
                continue
        return docs

    def weights_table(self, picks: list[str], weights: Any, docs: dict) -> list[list]:
        old = {r[0]: r[1] for r in table_rows(weights) if r}
        out = []
        for key in picks or []:
            label, desc = docs.get(key, (inp.reward_label(key), ""))
            out.append([label, old.get(label, 1.0), desc])
        return out

    def on_train_changed(self, train, test):
        """A new train set: column mappings back to auto-detect, and a shipped test set that belongs to
        another train set cleared (evaluation would score the wrong task), with a note saying so."""
        test_update, note = self.test_for(train, test)
        return gr.update(value=AUTO), gr.update(value=AUTO), test_update, note

    @staticmethod
    def test_for(train, test) -> tuple[Any, str]:
        if not test or test == NONE or inp.paired_test(train, test):
            return gr.update(), ""
        return (
            gr.update(value=NONE),
            f"{_('The test set belongs to another training set, so it was cleared:')} **{Path(test).name}** — "
            f"{_('upload or pick a test set for this data, or train without one.')}",
        )

    def on_agent_upload(self, file, current):
        if not file:
            return gr.update(), ""
        stored = self.studio.store_upload(file if isinstance(file, str) else file.name)
        path, notes = inp.resolve_agent_upload(stored)
        choices = inp.file_choices(inp.shipped_agents(), [path])
        note = (
            (f"{_('Relative paths in the upload:')} " + "; ".join(notes))
            if notes
            else f"{_('Uploaded')} {Path(stored).name}"
        )
        masked = inp.masked_secrets(stored)
        if masked:
            note += (
                f". {_('Secrets written in it were not stored:')} {', '.join(masked)} {_('now read')} `****`; "
                f"{_('pass them as')} `${{ENV_VAR}}` (docs/SECURITY.md)"
            )
        return gr.update(choices=choices, value=path), note

    def on_data_upload(self, file, test):
        if not file:
            return gr.update(), gr.update(), gr.update(), gr.update(), gr.update()
        stored = self.studio.store_upload(file if isinstance(file, str) else file.name)
        test_update, note = self.test_for(stored, test)
        return (
            gr.update(choices=inp.file_choices(inp.shipped_datasets(), [stored]), value=stored),
            gr.update(value=AUTO),
            gr.update(value=AUTO),
            test_update,
            note,
        )

    def on_test_upload(self, file, current):
        if not file:
            return gr.update(), gr.update()
        stored = self.studio.store_upload(file if isinstance(file, str) else file.name)
        return (
            gr.update(choices=[NONE_CHOICE] + inp.file_choices(inp.shipped_datasets(), [stored]), value=stored),
            "",
        )

    def on_rewards_picked(self, picks, weights, docs, problems):
        """A new choice of rewards replaces a failed upload's error (the user moved on from it)."""
        problems = {k: v for k, v in (problems or {}).items() if k != "reward"}
        return self.weights_table(picks, weights, docs or {}), problems

    def on_reward_upload(self, file, picks, weights, docs, problems):
        """An uploaded reward file's functions join the picks. One that cannot be imported (or defines
        no function) puts the Reward card in error until it is replaced or another reward is picked
        — the previous reward must not train silently in its place."""
        problems = {k: v for k, v in (problems or {}).items() if k != "reward"}
        if not file:
            return gr.update(), gr.update(), docs, "", problems
        stored = self.studio.store_upload(file if isinstance(file, str) else file.name)
        name = Path(stored).name
        try:
            fns = self.studio.reward_functions(stored)
            why = None if fns else "it defines no public function"
        except WorkerError as e:
            why = str(e)
        if why:
            problems["reward"] = (
                f"the uploaded reward file {name} cannot be used: {why} — fix it and upload it "
                "again, or pick another reward"
            )
            return gr.update(), gr.update(), docs, f"**{_('Cannot use')} {name}:** {why}", problems
        docs = dict(docs or {})
        for fn in fns:
            docs[fn["ref"]] = (inp.reward_label(fn["ref"]), fn.get("doc", ""))
        # the upload replaces a picked function of the same file name (a new version of it);
        # otherwise its first function is added
        same = {f"{Path(stored).name}:{fn['name']}": fn["ref"] for fn in fns}
        picks = [same.get(_file_fn(p), p) for p in picks or []]
        if not any(fn["ref"] in picks for fn in fns):
            picks.append(fns[0]["ref"])
        choices = [(label, key) for key, (label, _) in docs.items()]
        names = ", ".join(f["name"] for f in fns)
        return (
            gr.update(choices=choices, value=picks),
            self.weights_table(picks, weights, docs),
            docs,
            f"{_('Loaded')} {Path(stored).name}: {names} ({_('checked in the worker')})",
            problems,
        )


def _file_fn(key: str) -> str:
    """``/x/y/letter_reward.py:letter_reward`` → ``letter_reward.py:letter_reward``."""
    target, _, attr = key.rpartition(":")
    return f"{Path(target).name}:{attr}" if target.endswith(".py") else key
