"""The project as an installed distribution: console scripts, engines found through the entry-point
group, no path injection in product code, a light ``import engines``."""
from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_our_engines_are_registered_through_the_entry_point_group(clean_registry):
    api = clean_registry
    ours = {ep.name: ep.value for ep in metadata.entry_points(group=api.ENTRY_POINT_GROUP)
            if ep.dist is not None and ep.dist.name.replace("_", "-") == api.OWN_DISTRIBUTION}
    assert {"trl": "engines.trl:TrlProcessor", "verl": "engines.verl:VerlProcessor"}.items() <= ours.items()
    api._REGISTRY.clear()
    api._ENTRY_POINTS_LOADED = False
    assert {"trl", "verl"} <= set(api.registered_engines())          # nothing registered them but the group
    assert api._REGISTRY["trl"] == "engines.trl:TrlProcessor"         # kept as text until asked for
    assert api.get_processor_class("trl").__name__ == "TrlProcessor"


def test_the_console_scripts_run():
    bin_dir = Path(sys.executable).parent
    for script, words in (("aworld-studio", "AWorld Trainer Studio"), ("aworld-train", "training engines")):
        out = subprocess.run([str(bin_dir / script), "--help"], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and words in out.stdout, out.stderr[-2000:]


def test_no_path_injection_in_product_code():
    out = subprocess.run(["git", "grep", "-n", "-E", r"sys\.path|PYTHONPATH", "--", "engines", "aworld_gui", "app.py"],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.stdout == "", out.stdout


def test_import_engines_stays_light():
    code = ("import sys, json, engines, engines.trl, engines.verl; "
            "print(json.dumps(sorted(m for m in ('torch', 'trl', 'verl', 'transformers', 'gradio', 'ray', 'datasets')"
            " if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and json.loads(out.stdout) == [], out.stdout + out.stderr
