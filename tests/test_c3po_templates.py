"""The template registry, its plugin contract and the task files generated from it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_plugins import install, run_python

from c3po_plugin.templates import TIER_MODALITIES, Template, TemplateRegistry, registry
from faultline_eval.tasks import TASKS_DIR
from faultline_eval.tasks.c3po_configs import out_of_date, render_task_files, split_builtin
from sceval_plugin.plugins import PluginError

PAPER_TABLE_13 = {  # (category, tier) -> items, from the paper's Table 13
    ("ic", 1): 692,
    ("ic", 2): 624,
    ("ic", 3): 47,
    ("cc", 1): 729,
    ("cc", 2): 857,
    ("cc", 3): 292,
    ("cc", 4): 163,
}


def test_the_25_templates_match_the_papers_table_13():
    templates = list(registry())
    assert len(templates) == 25 and len({t.name for t in templates}) == 25
    assert sum(t.category == "ic" for t in templates) == 11
    per_cell = {}
    for t in templates:
        per_cell[(t.category, t.tier)] = per_cell.get((t.category, t.tier), 0) + t.paper_count
    assert per_cell == PAPER_TABLE_13 and sum(per_cell.values()) == 3404
    assert registry().get("CC08").name == "CausalMisattribution" and registry().get("CausalMisattribution").id == "CC08"
    for t in templates:
        assert "text" in t.modalities and t.base_modality in t.modalities and t.logical_form.endswith(".")
        if t.name != "InstructionalGapDetection":  # Appendix G puts it on a muted video
            assert t.modalities == TIER_MODALITIES[t.tier]


def test_registry_rejects_clashes_and_names_that_would_shadow_tasks():
    reg = TemplateRegistry()
    reg.add(Template("X1", "BeepCounting", "ic", 1, "audio", "Count."))
    with pytest.raises(PluginError, match="template name 'BeepCounting' is registered by two plugins"):
        reg.add(Template("X2", "BeepCounting", "ic", 1, "audio", "Count."))
    with pytest.raises(PluginError, match="template id 'X1'"):
        reg.add(Template("X1", "Other", "ic", 1, "audio", "Count."))
    with pytest.raises(PluginError, match="would shadow the task c3po_ic_t2"):
        reg.add(Template("X3", "IcT2", "ic", 1, "audio", "Count."))
    with pytest.raises(ValueError, match="base modality 'video' is not among"):
        Template("X4", "NoVideo", "cc", 1, "video", "Nope.")
    with pytest.raises(ValueError, match="category must be one of"):
        Template("X5", "Odd", "xx", 1, "audio", "Nope.")


def test_committed_task_files_match_the_registry():
    assert out_of_date(TASKS_DIR / "c3po", registry()) == [], "run `c3po tasks tasks/c3po --write`"
    names = {p.stem for p in (TASKS_DIR / "c3po").glob("c3po_*.yaml")}
    assert {"c3po_all", "c3po_ic", "c3po_cc", "c3po_ic_t3", "c3po_cc_t4", "c3po_causal_misattribution"} <= names
    assert "c3po_ic_t4" not in names  # no Information Composition template has tier 4
    assert len(names) == 3 + 7 + 25


BEEPS = """
from c3po_plugin import Template, hookimpl
from c3po_plugin.construction.specs import GenerationSpec

@hookimpl
def c3po_register_templates(registry):
    registry.add(Template("BX01", "BeepCountingConflict", "ic", 4, "video",
                          "The audio counts beeps; the video shows the tally; the question asks the total."))

@hookimpl
def c3po_register_generation_specs(registry):
    registry.add(GenerationSpec(
        "BX01", "BeepCountingConflict", "DISPERSAL (Tier 4)", "video",
        "VIDEO shows a tally (muted); AUDIO beeps N times; TEXT asks the total.",
        "Video: three marks. Audio: two beeps. Text: how many in all? Answer: five.",
        {"video": {"source_dataset": "any", "actions": ["mute"],
                   "selection_filter": {"requirement": "A clip that shows a tally.",
                                        "match": {"tags_any": ["counting"]}}},
         "audio": {"source_type": "generation (SFX)", "content_logic": "N beeps."},
         "text": {"query_skeleton": "How many are there in all?"}},
        aliases=("D_T4_901",)))
"""

CLASH = """
from c3po_plugin import Template, hookimpl

@hookimpl
def c3po_register_templates(registry):
    registry.add(Template("ZZ01", "CausalMisattribution", "cc", 2, "video", "Again."))
"""


@pytest.mark.slow
def test_an_installed_template_plugin_gets_its_tasks(tmp_path):
    site = install(tmp_path, "c3po-beeps", "c3po_beeps", BEEPS, group="c3po")
    done = run_python(
        site,
        """
        import json
        from c3po_plugin.templates import registry
        from faultline_eval.tasks.c3po_configs import task_dirs
        from c3po_plugin.construction import specs
        t = registry().get("BeepCountingConflict")
        dirs = task_dirs()
        found, skipped = specs.resolve(["D_T4_901"])
        print(json.dumps({"n": len(registry()), "plugin": t.plugin, "dirs": [str(d) for d in dirs],
                          "files": sorted(p.name for p in dirs[-1].glob("c3po_*.yaml")),
                          "spec": [s.template_id for s in found], "spec_plugin": found[0].plugin,
                          "specs": len(specs.all_specs())}))
    """,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["n"] == 26 and "c3po-beeps 0.1" in got["plugin"]
    # its generation spec comes through the spec hook and answers to its alias, beside the 25 built-ins
    assert got["spec"] == ["BX01"] and "c3po-beeps 0.1" in got["spec_plugin"] and got["specs"] == 26
    assert got["files"] == ["c3po_beep_counting_conflict.yaml", "c3po_ic_t4.yaml"]  # a new cell gets its tier task
    cli = subprocess.run(
        [Path(sys.executable).with_name("c3po"), "templates"],
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0 and "BeepCountingConflict" in cli.stdout


@pytest.mark.slow
def test_a_template_clash_names_both_plugins(tmp_path):
    site = install(tmp_path, "c3po-clash", "c3po_clash", CLASH, group="c3po")
    code = "from c3po_plugin.templates import registry; print(len(registry()))"
    done = run_python(site, code)  # the clashing plugin is skipped, the built-ins stay
    assert done.returncode == 0 and done.stdout.strip() == "25", done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("warning: c3po plugin 'c3po_clash' (distribution c3po-clash 0.1) skipped: ")
    assert "template name 'CausalMisattribution' is registered by two plugins" in line
    assert "'c3po_plugin.templates' (built in)" in line
    strict = run_python(site, code, env={"C3PO_STRICT_PLUGINS": "1"})
    assert strict.returncode != 0 and "C3PO_STRICT_PLUGINS is set" in strict.stderr.strip().splitlines()[-1]


def test_render_for_a_plugin_folder_holds_only_its_templates_and_new_cells():
    ours, extra = split_builtin(registry())
    assert len(ours) == 25 and extra == []
    beep = Template("BX01", "BeepCounting", "ic", 1, "audio", "Count.")
    files = render_task_files([beep], known_cells={(t.category, t.tier) for t in ours})
    assert sorted(n for n in files if n.endswith(".yaml")) == ["c3po_beep_counting.yaml"]
