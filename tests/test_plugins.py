"""Third-party operators arrive through real installed distributions with a ``sceval`` entry point.

Each test builds tiny packages, installs them with pip (offline, no build isolation) into a
private folder, and runs Python in a fresh process with that folder on ``PYTHONPATH``, exactly
as a user who ran ``pip install sceval-salt-pepper`` would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow

SALT_PEPPER = '''
import numpy as np
from sceval_plugin import hookimpl
from sceval_plugin.operators import SeverityTable, operator

FRACTION = SeverityTable("fraction of pixels flipped to black or white",
                         {10: 0.02, 30: 0.06, 50: 0.10, 70: 0.15}, identity=0.0)

@operator("salt_pepper", modality="vision", table=FRACTION, stochastic=True)
def salt_pepper(frames, fraction, rng):
    """Set a random fraction of pixels to pure black or white."""
    out = frames.copy()
    hit = rng.random(frames.shape[:-1]) < fraction
    out[hit] = rng.choice(np.array([0, 255], np.uint8), size=(int(hit.sum()), 1))
    return out

@hookimpl
def sceval_register_operators(registry):
    registry.add(salt_pepper)
'''

CLASH_WITH_NOISE = """
from sceval_plugin import hookimpl
from sceval_plugin.operators.vision import noise  # re-registering a built-in name

@hookimpl
def sceval_register_operators(registry):
    registry.add(noise)
"""

EXTRA_CONDITION = """
from sceval_plugin import hookimpl
from sceval_plugin.conditions import joint

@hookimpl
def sceval_register_conditions(registry):
    registry.add(joint(("typo_ocr", 50), ("defocus_blur", 50), role="extended", suites=(), alias=False))
"""

BROKEN_IMPORT = """
raise ImportError("this plugin needs a package that is not installed")
"""


def install(tmp_path: Path, dist: str, module: str, source: str, group: str = "sceval") -> Path:
    """pip-install a one-module distribution declaring ``<group> = <module>`` into tmp_path/site."""
    project = tmp_path / "src" / dist
    project.mkdir(parents=True)
    (project / f"{module}.py").write_text(textwrap.dedent(source))
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
    )
    (project / "setup.cfg").write_text(
        f"[metadata]\nname = {dist}\nversion = 0.1\n\n[options]\npy_modules = {module}\n\n"
        f"[options.entry_points]\n{group} =\n    {module} = {module}\n"
    )
    site = tmp_path / "site"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            "--target",
            str(site),
            str(project),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return site


def run_python(site: Path, code: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site), **(env or {})}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], env=env, capture_output=True, text=True)


def test_installed_plugin_operator_is_listed_and_applied(tmp_path):
    site = install(tmp_path, "sceval-salt-pepper", "sceval_salt_pepper", SALT_PEPPER)
    done = run_python(
        site,
        """
        import json, numpy as np
        from sceval_plugin import operators
        spec = operators.get("salt_pepper")
        frames = np.full((2, 64, 64, 3), 128, np.uint8)
        outs = [operators.apply("salt_pepper", frames, severity=70, variant=v, key="s1") for v in range(3)]
        again = operators.apply("salt_pepper", frames, severity=70, variant=2, key="s1")
        print(json.dumps({
            "vision": operators.names("vision"),
            "variants": spec.variants, "plugin": spec.plugin, "param": spec.parameter(70),
            "flipped": [float((o != 128).any(-1).mean()) for o in outs],
            "distinct": len({o.tobytes() for o in outs}), "repeat": bool((again == outs[2]).all()),
            "shape_ok": all(o.shape == frames.shape for o in outs),
        }))
    """,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert "salt_pepper" in got["vision"] and "noise" in got["vision"]
    assert got["variants"] == 3 and got["param"] == 0.15
    assert "sceval-salt-pepper 0.1" in got["plugin"]
    assert all(abs(f - 0.15) < 0.02 for f in got["flipped"])
    assert got["distinct"] == 3 and got["repeat"] and got["shape_ok"]

    cli = subprocess.run(
        [Path(sys.executable).with_name("sceval"), "operators"],
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0 and "salt_pepper" in cli.stdout


def one_warning(stderr: str) -> str:
    """The single line a skipped plugin leaves on stderr (no traceback)."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: sceval plugin "), stderr
    return lines[0]


def test_two_plugins_registering_one_name_are_both_named(tmp_path):
    install(tmp_path, "sceval-salt-pepper", "sceval_salt_pepper", SALT_PEPPER)
    site = install(tmp_path, "sceval-salt-pepper-fork", "sceval_salt_pepper_fork", SALT_PEPPER)
    code = "from sceval_plugin import operators; print(operators.get('salt_pepper').plugin, len(operators.names()))"
    done = run_python(site, code)
    assert done.returncode == 0, done.stderr
    message = one_warning(done.stderr)
    assert "operator 'salt_pepper' is registered by two plugins" in message
    assert "sceval-salt-pepper 0.1" in message and "sceval-salt-pepper-fork 0.1" in message
    # the first keeps its operator; the fork is the one skipped
    assert message.startswith("warning: sceval plugin 'sceval_salt_pepper_fork' (distribution sceval-salt-pepper-fork")
    assert done.stdout.split()[-1] == "15" and "sceval-salt-pepper 0.1" in done.stdout
    strict = run_python(site, code, env={"SCEVAL_STRICT_PLUGINS": "1"})
    assert strict.returncode != 0 and "SCEVAL_STRICT_PLUGINS is set" in strict.stderr.strip().splitlines()[-1]


def test_clash_with_a_builtin_names_the_builtin(tmp_path):
    site = install(tmp_path, "sceval-noise-again", "sceval_noise_again", CLASH_WITH_NOISE)
    done = run_python(site, "from sceval_plugin import operators; print(operators.get('noise').plugin)")
    assert done.returncode == 0 and "sceval_plugin.operators.vision' (built in)" in done.stdout
    message = one_warning(done.stderr)
    assert "'noise' is registered by two plugins" in message
    assert "sceval_plugin.operators.vision' (built in)" in message and "sceval-noise-again" in message
    cli = subprocess.run(
        [Path(sys.executable).with_name("sceval"), "operators"],
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0 and len(cli.stdout.strip().splitlines()) == 1 + 14
    assert one_warning(cli.stderr) == message


def test_a_plugin_that_fails_to_import_is_named(tmp_path):
    site = install(tmp_path, "sceval-broken", "sceval_broken", BROKEN_IMPORT)
    done = run_python(site, "from sceval_plugin import operators; print(len(operators.names()))")
    assert done.returncode == 0 and done.stdout.strip() == "14"
    message = one_warning(done.stderr)
    assert "sceval plugin 'sceval_broken' (distribution sceval-broken 0.1) skipped: failed to import" in message
    assert "needs a package that is not installed" in message
    debug = run_python(site, "from sceval_plugin import operators; operators.names()", env={"FAULTLINE_DEBUG": "1"})
    assert "Traceback" in debug.stderr
    # and the user can also opt out of third-party plugins altogether
    done = subprocess.run(
        [sys.executable, "-c", "from sceval_plugin import operators; print(len(operators.names()))"],
        env={**os.environ, "PYTHONPATH": str(site), "SCEVAL_DISABLE_PLUGIN_AUTOLOAD": "1"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and done.stdout.strip() == "14" and not done.stderr.strip()


ONE_TEMPLATE = """
from c3po_plugin import Template, hookimpl

@hookimpl
def c3po_register_templates(registry):
    registry.add(Template("BX01", "BeepColourLookup", "ic", 1, "image",
                          "The audio beeps N times; the picture shows a row of shapes; which colour is the Nth?"))
"""

#: In a fresh process with the plugins: the task's own render of each logged SCEval trial (the
#: operator's frames), saved per condition, and whether it differs from the clean render.
RENDERED = """
import json, sys
from pathlib import Path
import numpy as np
from sceval_plugin.conditions import catalogue
from sceval_plugin.data.sources import load_source
from sceval_plugin.render import render
items = {i.sample_id: i for i in load_source("demo").items}
out = {}
for path in Path(sys.argv[1]).rglob("*_samples_sceval_*.jsonl"):
    for line in path.read_text().splitlines():
        r = json.loads(line)["sceval_record"]
        trial = render(items[r["sample_id"]], catalogue().get(r["condition_id"]), r["variant"])
        np.save(Path(sys.argv[2]) / f"{r['condition_id']}.npy", np.asarray(trial.frames))
        clean = render(items[r["sample_id"]], catalogue().get("clean"), 0)
        out[r["condition_id"]] = [r["sample_id"], r["variant"], bool(np.array_equal(trial.frames, clean.frames))]
print(json.dumps(out))
"""


def test_plugin_conditions_operators_and_templates_run_in_lmms_eval_and_show_in_the_viewer(tmp_path):
    """A third party's operator, joint condition and C3PO template run as lmms-eval tasks, and
    the viewer (`faultline view`) shows their trials: the operator's frames exactly as the task
    renders them (regenerated by the plugin), the template's trial page with its media."""
    from html.parser import HTMLParser

    from PIL import Image

    from c3po_plugin.data.sources import DEMO_DIR as C3PO_DEMO

    install(tmp_path, "sceval-salt-pepper", "sceval_salt_pepper", SALT_PEPPER)
    install(tmp_path, "c3po-beep-colour", "c3po_beep_colour", ONE_TEMPLATE, group="c3po")
    site = install(tmp_path, "sceval-extra-cell", "sceval_extra_cell", EXTRA_CONDITION)
    row = json.loads((C3PO_DEMO / "items.jsonl").read_text().splitlines()[0])  # an image + audio item
    items = tmp_path / "c3po_items"
    for kind in ("image", "audio"):
        (items / row[kind]).parent.mkdir(parents=True, exist_ok=True)
        (items / row[kind]).write_bytes((C3PO_DEMO / row[kind]).read_bytes())
    (items / "items.jsonl").write_text(json.dumps({**row, "template": "BX01", "sample_id": "beep-colour-0"}) + "\n")
    env = {
        **os.environ,
        "PYTHONPATH": str(site),
        "SCEVAL_CACHE": str(tmp_path / "cache"),
        "C3PO_JUDGE": "exact",
        "C3PO_SOURCE": str(items),
    }
    listing = subprocess.run(
        [Path(sys.executable).with_name("sceval"), "conditions", "--block", "tv"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert "bi_tv_typo_ocr_defocus_blur_t50_v50" in listing.stdout
    tasks = "sceval_single_salt_pepper_v50,sceval_bi_tv_typo_ocr_defocus_blur_t50_v50,c3po_all"
    done = subprocess.run(
        [
            Path(sys.executable).with_name("lmms-eval"),
            "--model",
            "sceval_reference",
            "--tasks",
            tasks,
            "--limit",
            "1",
            "--log_samples",
            "--output_path",
            "out/",
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for task in tasks.split(",")[:2]:
        assert any(line.startswith(f"|{task}") and "sceval_valid_trials" in line for line in done.stdout.splitlines())
    generated = list((tmp_path / "cache" / "tasks").rglob("sceval_single_salt_pepper_v50.yaml"))
    assert len(generated) == 1

    view = subprocess.run(
        [Path(sys.executable).with_name("faultline"), "view", "out", "-o", "site"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert view.returncode == 0, view.stderr[-3000:]
    assert "SCEval: 2 trial(s) of 1 model(s): 2 shown with media" in view.stdout
    assert "C3PO: 1 trial(s) of 1 model(s): 1 shown with media" in view.stdout
    (tmp_path / "rendered").mkdir()
    rendered = run_python(site, RENDERED, str(tmp_path / "out"), str(tmp_path / "rendered"), env=env)
    assert rendered.returncode == 0, rendered.stderr[-3000:]
    trials = json.loads(rendered.stdout)
    assert not trials["single_salt_pepper_v50"][2]  # the operator changed the frames

    class Sections(HTMLParser):  # each trial section's "sent" images (full size), by section id
        def __init__(self):
            super().__init__()
            self.section, self.sent, self.images = None, False, {}

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "section":
                self.section, self.sent = a["id"], False
            elif tag == "a" and self.sent and a.get("href", "").endswith(".png"):
                self.images.setdefault(self.section, []).append(a["href"])

        def handle_data(self, data):
            if data in ("sent", "clean"):
                self.sent = data == "sent"

    out = tmp_path / "site"
    for condition in ("single_salt_pepper_v50", "bi_tv_typo_ocr_defocus_blur_t50_v50"):
        sample, variant, _ = trials[condition]
        page = next((out / "sceval" / "samples").glob(f"{sample}-*.html"))
        parser = Sections()
        parser.feed(page.read_text())
        [section] = [k for k in parser.images if k.startswith(f"{condition}-{variant}-")]
        shown = np.stack([np.asarray(Image.open(page.parent / href)) for href in parser.images[section]])
        assert np.array_equal(shown, np.load(tmp_path / "rendered" / f"{condition}.npy")), condition
        assert next((out / "sceval" / "cells").glob(f"{condition}-*.html")).is_file()
    c3po_page = next((out / "c3po" / "samples").glob("beep-colour-0-*.html")).read_text()
    assert (
        "BX01" in c3po_page
        and "<audio" in c3po_page
        and "BeepColourLookup" in (next((out / "c3po" / "cells").glob("BX01-*.html")).read_text())
    )
    media = [line.split('src="')[1].split('"')[0] for line in c3po_page.split("<img")[1:]]
    assert media and all((out / "c3po" / "samples" / m).is_file() for m in media)


def test_a_broken_plugin_does_not_break_other_lmms_eval_tasks(tmp_path):
    site = install(tmp_path, "sceval-broken", "sceval_broken", BROKEN_IMPORT)
    env = {**os.environ, "PYTHONPATH": str(site), "C3PO_JUDGE": "exact"}
    done = subprocess.run(
        [
            Path(sys.executable).with_name("lmms-eval"),
            "--model",
            "sceval_reference",
            "--tasks",
            "sceval_clean,c3po_all",
            "--limit",
            "1",
            "--output_path",
            "out/",
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(next((tmp_path / "out").rglob("*_results.json")).read_text())
    assert summary["results"]["sceval_clean"]["sceval_valid_trials,none"] == 1
    assert summary["results"]["c3po_all"]["c3po_graded,none"] == 1
    warned = [line for line in done.stderr.splitlines() if "sceval_broken" in line]
    assert warned and all(
        line.startswith(
            "warning: sceval plugin 'sceval_broken' (distribution sceval-broken 0.1) skipped: failed to import"
        )
        for line in warned
    )
    assert "Traceback" not in done.stderr
