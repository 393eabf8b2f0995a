"""Wrapping any lmms-eval task with SCEval conditions (issue 27; docs/design/wrap-any-task.md).

Base-task access (``sceval_plugin/base_task.py``), the wrapped trial (``sceval_plugin.sceval_trial.WrappedTrial``), the
task adapters, the generated names/YAMLs/manifest, and the wrapped callables on the local copies
of ``tests/wrap_datasets.py``. Each test takes seconds; the lmms-eval CLI one is marked slow.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
from types import SimpleNamespace

import numpy as np
import pytest
import wrap_datasets
from test_lmms_cli import lmms_eval

from faultline_app import faultline_cli as commands
from faultline_eval.core.registry import PluginError
from faultline_eval.core.trial import SCHEMA_VERSION, Trial, json_schema
from faultline_eval.model_wrappers import lmms_plugin
from faultline_eval.model_wrappers.local_reply_store import store_key
from faultline_eval.tasks import wrap_configs, wrapped_task
from sceval_plugin import base_task, task_adapters
from sceval_plugin.conditions import catalogue
from sceval_plugin.eval_prompts import GENERIC_INSTRUCTION
from sceval_plugin.sceval_trial import WrappedTrial

BUILT_IN = list(wrap_datasets.BUILDERS)  # one task per built-in adapter

# --- base task access (Contract B) ---------------------------------------------------------------


def test_base_yaml_path_finds_the_installed_yaml_and_names_a_typo():
    path = base_task.base_yaml_path("librispeech_test_clean")  # spelt `task : "..."` in its YAML
    assert path.name == "librispeech_test_clean.yaml" and path.parent.name == "librispeech"
    assert base_task.base_yaml_path("mme").parent == base_task.lmms_eval_tasks_dir() / "mme"
    with pytest.raises(base_task.BaseTaskError, match=r"'worldsens'.*did you mean 'worldsense'"):
        base_task.base_yaml_path("worldsens")


def test_no_builtin_lmms_eval_task_name_holds_the_wrap_separator():
    names = base_task.builtin_task_names()
    assert len(names) > 1000 and "worldsense" in names
    assert not [n for n in names if "__" in n]


def test_metric_specs_and_aggregate_call_the_base_tasks_own_aggregations():
    specs = base_task.metric_specs("mme")
    assert [(s.name, s.higher_is_better, s.takes_args) for s in specs] == [
        ("mme_perception_score", True, False),
        ("mme_cognition_score", True, False),
    ]
    # clotho_aqa names its aggregation by string ("mean"): resolved through lmms-eval's registry
    assert base_task.aggregate("clotho_aqa_test", "exact_match", [1.0, 0.0, 0.0, 1.0]) == 0.5
    # MME's own aggregation: acc + acc+ over the image pairs (one pair right, one pair half right)
    items = [
        {"question_id": "a.png", "category": "color", "score": 1.0},
        {"question_id": "a.png", "category": "color", "score": 1.0},
        {"question_id": "b.png", "category": "color", "score": 1.0},
        {"question_id": "b.png", "category": "color", "score": 0.0},
    ]
    assert base_task.aggregate("mme", "mme_perception_score", items) == pytest.approx(75.0 + 50.0)
    with pytest.raises(base_task.BaseTaskError, match="no metric 'accuracy'"):
        base_task.aggregate("mme", "accuracy", items)


# --- the wrapped trial (Contract C) --------------------------------------------------------------


def test_wrapped_trial_round_trips_and_is_in_the_json_schema():
    trial = WrappedTrial(
        sample_id="1234",
        variant=1,
        correct=WrappedTrial.correct_of(1.0),
        invalid=None,
        base_task="worldsense",
        condition_id="single_noise_v50",
        doc_id=3,
        unit="1234",
        score=1.0,
        adapter="worldsense@1",
        seed_scheme="sceval-seed-v3",
    )
    entry = json.loads(json.dumps(trial.to_json()))
    assert entry["schema_version"] == SCHEMA_VERSION and entry["correct"] == 1
    assert WrappedTrial.from_json(entry) == trial
    assert set(json_schema()["$defs"]["WrappedTrial"]["required"]) == {"schema_version", *entry}
    assert isinstance(trial, Trial)
    assert [WrappedTrial.correct_of(s) for s in (0, 1.0, 0.5, None, 37.5)] == [0, 1, None, None, None]
    assert [WrappedTrial.correct_of(s, higher_is_better=False) for s in (0, 1.0, 0.5)] == [None, None, None]


def test_a_per_doc_error_rate_is_no_verdict():
    """ami_test's per-doc WER is a number the generic reading takes as the score: a WER of 1
    (every word wrong) must not be counted correct, nor a WER of 0 wrong; the trial is unscored
    and the score keeps the WER (the audit reads it as an error rate)."""
    process_results = wrapped_task.process_results__ami_test__clean__var0
    doc = {"text": "hello there world", "audio": None}
    for reply, wer in (("goodbye", 1.0), ("hello there world", 0.0)):
        out = process_results(doc, [reply])
        trial = WrappedTrial.from_json(out["faultline_trial"])
        assert out["wer"] == trial.score == wer and trial.correct is None, (reply, out)


# --- names, tags, manifest, stale folders (Contract A) ---------------------------------------------


@pytest.fixture
def wrap_cache(tmp_path, monkeypatch):
    """A private cache folder: wrapped task files and wrapped media go there."""
    monkeypatch.setenv("SCEVAL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_names_parse_back_and_tags_follow_sceval_suites():
    panel = catalogue().get("bi_tv_drop_words_noise_t70_v70")
    name = wrap_configs.wrapped_name("worldsense", panel.id, 2)
    assert name == "worldsense__bi_tv_drop_words_noise_t70_v70__var2"
    assert wrap_configs.parse_name(name) == wrap_configs.WrappedName("worldsense", panel.id, 2)
    assert wrap_configs.parse_name("worldsense__sceval_panel") == wrap_configs.WrappedName(
        "worldsense", "sceval_panel", None
    )
    for not_ours in ("worldsense", "worldsense__*", "a__b__c", "a__b__var"):
        assert wrap_configs.parse_name(not_ours) is None
    tags = wrap_configs.tags("worldsense", panel)
    assert tags[0] == "worldsense__bi_tv_drop_words_noise_t70_v70"
    assert {"worldsense__sceval_panel", "worldsense__sceval_all"} <= set(tags)
    assert panel.aliases and all(f"worldsense__{alias}" in tags for alias in panel.aliases)


def test_conditions_that_cannot_act_on_a_task_are_not_generated_and_say_why():
    conditions = [catalogue().get(i) for i in ("clean", "single_noise_v50", "single_mute_a50", "single_drop_words_t70")]
    conditions += [catalogue().get(i) for i in ("missing_audio", "missing_text", "order1_clean")]
    applies, skipped = wrap_configs.plan("librispeech_test_clean", conditions)
    assert [c.id for c in applies] == ["clean", "single_mute_a50", "missing_audio"]
    assert "vision" in skipped["single_noise_v50"] and "question" in skipped["single_drop_words_t70"]
    assert "context" in skipped["missing_text"] and "reorder" in skipped["order1_clean"]
    applies, skipped = wrap_configs.plan("mme", conditions)
    assert [c.id for c in applies] == ["clean", "single_noise_v50", "single_drop_words_t70"]
    assert "audio" in skipped["single_mute_a50"] and "audio" in skipped["missing_audio"]
    with pytest.raises(wrap_configs.WrapNameError, match="does not apply to 'mme'"):
        wrap_configs.write("mme", [catalogue().get("single_mute_a50")])


def test_the_controls_that_remove_or_keep_only_the_question_apply_to_every_task_with_one():
    """The visual+audio shortcut replaces only the question (options stay where listed), so it
    applies to MME and clotho_aqa, which name no options or context field (issue 36); the
    question-and-options shortcut keeps only the question there. A task without a question (ASR)
    is refused, saying so; the options-only shortcut still needs an options field."""
    controls = [
        catalogue().get(c) for c in ("shortcut_visual_audio", "shortcut_question_options", "shortcut_options_only")
    ]
    for task in ("mme", "clotho_aqa_test", "worldsense"):
        applies, skipped = wrap_configs.plan(task, controls)
        assert {"shortcut_visual_audio", "shortcut_question_options"} <= {c.id for c in applies}, (task, skipped)
    _, skipped = wrap_configs.plan("mme", controls)
    assert skipped == {
        "shortcut_options_only": "shows the options without the question, and mme@1 names no options field"
    }
    _, skipped = wrap_configs.plan("librispeech_test_clean", controls)
    assert (
        skipped["shortcut_visual_audio"] == "replaces the question, which the task does not have (a fixed instruction)"
    )
    # without media and without a question, the model would see the fixed instruction alone
    for control in ("shortcut_question_options", "shortcut_text_only"):
        _, skipped = wrap_configs.plan("librispeech_test_clean", [catalogue().get(control)])
        assert skipped[control].startswith("keeps only the text, and the task has no question"), skipped


def test_a_generic_task_whose_question_is_not_found_refuses_to_remove_it():
    """The generic path infers the question field on the first doc; when none occurs in the
    prompt (ami_test's fixed instruction), the question-removing shortcut would show the question
    after all, so the wrapped task stops naming the control instead."""
    task = wrapped_task.wrapped("ami_test__shortcut_visual_audio__var0")
    assert task.adapter is task_adapters.GENERIC
    with pytest.raises(wrapped_task.WrappedTaskError, match="'shortcut_visual_audio' removes the question"):
        wrapped_task.doc_plan(task, {"text": "hello there", "audio": {"array": np.zeros(160), "sampling_rate": 16_000}})
    task = wrapped_task.wrapped("ami_test__shortcut_question_options__var0")
    with pytest.raises(wrapped_task.WrappedTaskError, match="'shortcut_question_options' keeps only the text"):
        wrapped_task.doc_plan(task, {"text": "hello there", "audio": {"array": np.zeros(160), "sampling_rate": 16_000}})


def test_mme_without_its_question_keeps_the_tasks_own_format(local_copies, wrap_cache):
    """MME's shortcut prompt: an instruction for a task without options, then MME's own post
    prompt (its fixed suffix, kept at the end of the question, is stripped by its formatter)."""
    from sceval_plugin.eval_prompts import GENERIC_OPEN_INSTRUCTION

    copy, _, docs = local_copies["mme"]
    shortcut = catalogue().get("shortcut_visual_audio")
    wrap_configs.write("mme", [shortcut], wrap_configs.data_override("mme", copy.dataset_path))
    _, requests = _build("mme__shortcut_visual_audio__var0")
    prompts = {arguments[0] for arguments, _ in requests}
    assert prompts == {GENERIC_OPEN_INSTRUCTION + "\nAnswer the question using a single word or phrase."}
    assert all(len(arguments[2](doc)) == 1 for arguments, doc in requests)  # the image stays


def test_manifest_records_the_base_and_a_stale_folder_is_regenerated(wrap_cache):
    written = wrap_configs.ensure(["mme__single_noise_v50", "mme", "sceval_panel", "mine__x"])
    assert written == [f"mme__single_noise_v50__var{v}" for v in range(3)]
    folder = wrap_configs.task_folder("mme")
    manifest = json.loads((folder / wrap_configs.MANIFEST).read_text())
    base = base_task.base_yaml_path("mme")
    assert manifest["base_yaml"] == str(base)
    assert manifest["base_yaml_sha256"] == hashlib.sha256(base.read_bytes()).hexdigest()
    assert manifest["lmms_eval_version"] == importlib.metadata.version("lmms_eval") == "0.7.3"
    assert manifest["adapter"] == "mme@1"
    assert manifest["tasks"]["mme__single_noise_v50__var1"] == {"condition": "single_noise_v50", "variant": 1}
    text = (folder / "mme__single_noise_v50__var1.yaml").read_text()
    assert f'include: "{base}"' in text and "process_results: !function faultline_eval.tasks.wrapped_task." in text
    assert "doc_to_messages" not in text  # mme has none: lmms-eval's auto-messages use the wrapped functions
    assert wrap_configs.stale_reason(folder) is None
    # adding a condition keeps the others
    wrap_configs.ensure(["mme__clean"])
    assert set(json.loads((folder / wrap_configs.MANIFEST).read_text())["tasks"]) == {
        "mme__clean__var0",
        *written,
    }
    # an lmms-eval upgrade (another base YAML) or an adapter bump makes the folder stale: regenerated
    manifest = json.loads((folder / wrap_configs.MANIFEST).read_text())
    for key, value in (("base_yaml_sha256", "0" * 64), ("adapter", "mme@0"), ("lmms_eval_version", "0.7.2")):
        (folder / wrap_configs.MANIFEST).write_text(json.dumps({**manifest, key: value}))
        (folder / "mme__clean__var0.yaml").write_text("stale")
        assert key in wrap_configs.stale_reason(folder)
        (line,) = wrap_configs.refresh_stale()
        assert line.startswith(f"{folder}: regenerated ({key}")
        assert wrap_configs.stale_reason(folder) is None
        assert (folder / "mme__clean__var0.yaml").read_text().startswith("# Generated by `faultline wrap`")
    (folder / "mme__single_noise_v50__var2.yaml").unlink()
    assert "missing" in wrap_configs.stale_reason(folder)
    assert len(wrap_configs.refresh_stale()) == 1 and wrap_configs.stale_reason(folder) is None


def test_a_mistyped_condition_gets_did_you_mean(wrap_cache):
    with pytest.raises(wrap_configs.WrapNameError, match=r"did you mean mme__single_noise_v50"):
        wrap_configs.ensure(["mme__single_noise_v5"])
    with pytest.raises(wrap_configs.WrapNameError, match=r"no lmms-eval task 'worldsens'; did you mean worldsense"):
        wrap_configs.ensure(["worldsens__clean"])
    with pytest.raises(wrap_configs.WrapNameError, match=r"var0\.\.var2"):
        wrap_configs.ensure(["mme__single_noise_v50__var3"])

    class Manager:  # what index_wrapped_tasks needs of lmms-eval's TaskManager (the CLI test runs the real one)
        _task_index: dict = {}

    with pytest.raises(lmms_plugin.UnknownTaskError, match="did you mean mme__clean"):
        lmms_plugin.index_wrapped_tasks(Manager(), ["mme__clen"])
    assert not wrap_configs.task_folder("mme").exists()  # nothing written for a bad name


# --- task adapters ----------------------------------------------------------------------------------


def test_built_in_adapters_serve_their_tasks_and_clashes_name_both_plugins():
    assert {t: task_adapters.adapter_for(t).label for t in BUILT_IN} == {
        "worldsense": "worldsense@1",
        "av_odyssey": "av_odyssey@1",
        "omni_bench": "omni_bench@1",
        "videomme": "videomme@1",
        "mvbench_action_antonym": "mvbench@1",
        "clotho_aqa_test": "clotho_aqa@1",
        "librispeech_test_clean": "librispeech@1",
        "mme": "mme@1",
        "video_holmes": "video_holmes@1",
        "av_speakerbench_audiovisual": "av_speakerbench@1",
        "mmmu_val": "mmmu@1",
        "air_bench_foundation_sound": "air_bench@1",
    }
    assert task_adapters.adapter_for("air_bench_foundation_music").label == "air_bench@1"
    # no per-task schema to pin: the siblings and the answerless test split take the generic path
    for generic in ("av_speakerbench_audio", "mmmu_test", "air_bench_chat_sound", "vocalsound_test"):
        assert task_adapters.adapter_for(generic) is task_adapters.GENERIC
    registry = task_adapters.TaskAdapterRegistry()
    with registry.adding_for("plugin-a"):
        registry.add(task_adapters.TaskAdapter("mine", ("mvbench_*",)))
    with registry.adding_for("plugin-b"):
        with pytest.raises(PluginError, match="plugin-a and plugin-b"):
            registry.add(task_adapters.TaskAdapter("theirs", ("mvbench_*",)))
        registry.add(task_adapters.TaskAdapter("exact", ("mvbench_action_antonym",)))
        registry.add(task_adapters.TaskAdapter("overlap", ("mvbench_a*",)))
    assert registry.for_task("mvbench_action_antonym").name == "exact"  # an exact name wins
    with pytest.raises(PluginError, match=r"'mine' \(plugin-a\) and 'overlap' \(plugin-b\)"):
        registry.for_task("mvbench_action_sequence")


@pytest.fixture(scope="module")
def local_copies(wrap_copies):
    """The local copies of the built-in adapters' tasks (the session's, tests/wrap_datasets.py): the copy, its
    split as ``datasets`` loads it, and its docs as lmms-eval reads them (Audio decoded by the
    product's decoded_audio)."""
    import datasets

    out = {}
    for task in BUILT_IN:
        copy = wrap_copies.copies[task]
        if (copy.dataset_path / "dataset_dict.json").is_file():
            split = next(iter(datasets.load_from_disk(str(copy.dataset_path)).values()))
        else:
            split = datasets.load_dataset(str(copy.dataset_path), split="train")
        out[task] = (copy, split, [dict(d) for d in wrapped_task.decoded_audio(split)])
    return out


def test_adapters_key_the_local_copies_by_the_benchmarks_own_ids(local_copies):
    for task, (_, split, docs) in local_copies.items():
        adapter = task_adapters.adapter_for(task)
        keys, key_field = wrapped_task.doc_keys(wrapped_task.wrapped(f"{task}__clean__var0"), split)
        if task == "mme":  # the two questions of an image share its key (same corrupted image)
            assert keys == [d["question_id"] for d in docs] and len(set(keys)) == len(docs) // 2
        else:
            assert len(set(keys)) == len(docs), task
        assert key_field == ("index" if task == "omni_bench" and "index" in split.column_names else None) or (
            adapter.doc_key is None and key_field in task_adapters.KEY_FIELDS
        ), task
        if adapter.question_field is not None:
            assert all(isinstance(d[adapter.question_field], str) for d in docs), task
    assert [
        wrapped_task.doc_keys(wrapped_task.wrapped("worldsense__clean__var0"), local_copies["worldsense"][1])[0]
    ] == [[str(d["index"]) for d in local_copies["worldsense"][2]]]
    # the generic path: an id column only when unique (MME's question_id is not); else a digest of
    # the doc's text and number fields, which follows the doc, not its row or field order
    assert task_adapters.infer_key_field(local_copies["videomme"][2]) == "question_id"
    assert task_adapters.infer_key_field(local_copies["mme"][2]) is None
    doc = local_copies["mvbench_action_antonym"][2][0]
    assert task_adapters.digest_key(doc) == task_adapters.digest_key(dict(reversed(list(doc.items()))))
    assert task_adapters.modalities_of(["/x/a.png", {"array": [0.0], "sampling_rate": 16000}]) == {
        "text",
        "vision",
        "audio",
    }


def test_av_odyssey_media_tags_survive_text_corruption(local_copies):
    _, _, docs = local_copies["av_odyssey"]
    tag = re.compile(r"\[(?:audio|video|img)\d+\]")
    changed = 0
    for variant in range(3):
        task = wrapped_task.wrapped(f"av_odyssey__single_drop_words_t70__var{variant}")
        for doc in docs:
            shown = wrapped_task.shown_doc(task, doc)["question"]
            assert tag.findall(shown) == tag.findall(doc["question"])
            changed += shown != doc["question"]
    assert changed == 3 * len(docs)
    shortcut = wrapped_task.shown_doc(wrapped_task.wrapped("av_odyssey__shortcut_visual_audio__var0"), docs[0])
    assert shortcut["question"] == "[img1] [audio1] " + GENERIC_INSTRUCTION


# --- wrapped tasks built by lmms-eval from the local copies -------------------------------------------


def _build(name: str, task_type: str = "simple"):
    from lmms_eval.tasks import TaskManager, get_task_dict

    manager = TaskManager("WARNING", include_path=[str(wrap_configs.wrap_root())], include_defaults=False)
    built = get_task_dict([name], manager, task_type=task_type)[name]
    built.build_all_requests(limit=None, rank=0, world_size=1)
    docs = built.test_docs()
    return built, [(inst.arguments, docs[inst.doc_id]) for inst in built.instances]


def _pixels(arguments, doc) -> np.ndarray:
    (image,) = arguments[2](doc)
    return np.asarray(image)


def test_mme_wrapped_is_deterministic_paired_and_keeps_the_base_metric(local_copies, wrap_cache):
    copy, _, docs = local_copies["mme"]
    joint = catalogue().get("bi_tv_drop_words_noise_t70_v70")
    wrap_configs.write("mme", [catalogue().get("clean"), joint], wrap_configs.data_override("mme", copy.dataset_path))
    clean, clean_requests = _build("mme__clean__var0")
    runs = {v: _build(f"mme__{joint.id}__var{v}")[1] for v in (0, 1)}
    base_pixels = [np.asarray(d["image"].convert("RGB")) for d in docs]
    assert all(np.array_equal(_pixels(*r), base_pixels[i]) for i, r in enumerate(clean_requests))
    var0 = [_pixels(*r) for r in runs[0]]
    assert all(np.array_equal(a, _pixels(*r)) for a, r in zip(var0, runs[0]))  # the same bytes twice
    assert not any(np.array_equal(a, b) for a, b in zip(var0, base_pixels))
    assert not any(np.array_equal(a, _pixels(*r)) for a, r in zip(var0, runs[1]))  # variants differ
    # both questions of an image see the same corrupted image (MME's acc+ needs it)
    assert np.array_equal(var0[0], var0[1]) and np.array_equal(var0[2], var0[3])
    assert not np.array_equal(var0[0], var0[2])
    # the question is corrupted before the base formatter, whose fixed suffix survives intact
    for (arguments, doc), (clean_arguments, _) in zip(runs[1], clean_requests):
        assert arguments[0] != clean_arguments[0] and clean_arguments[0].startswith(doc["question"][:10])
        assert arguments[0].endswith("\nAnswer the question using a single word or phrase.")
        assert "yes or no" not in arguments[0] and "Please" not in arguments[0]
    # process_results: the base's dict and the trial; the base aggregation still runs
    scored = [clean.process_results(doc, ["Yes"]) for doc in clean.test_docs()]
    trial = WrappedTrial.from_json(scored[1]["faultline_trial"])
    assert trial.doc_id == 1 and trial.sample_id == trial.unit == docs[1]["question_id"]
    right = [float(d["answer"] == "Yes") for d in docs]
    assert (trial.base_task, trial.condition_id, trial.adapter) == ("mme", "clean", "mme@1")
    assert trial.score == right[1] and trial.correct == int(right[1])
    pairs = [right[i : i + 2] for i in range(0, len(right), 2)]
    expected = 100 * sum(right) / len(right) + 100 * sum(all(p) for p in pairs) / len(pairs)  # acc + acc+
    assert clean.aggregation()["mme_perception_score"]([s["mme_perception_score"] for s in scored]) == expected
    empty = WrappedTrial.from_json(clean.process_results(clean.test_docs()[0], [" "])["faultline_trial"])
    assert empty.invalid == "empty"
    # the models' reply stores key wrapped docs (a killed run resumes): per condition and variant
    # and row, the same key when the docs are built again
    keys = [_store_key(doc, "Is it red?") for doc in clean.test_docs()]
    assert None not in keys and len(set(keys)) == len(keys)
    assert keys == [_store_key(doc, "Is it red?") for doc in _build("mme__clean__var0")[0].test_docs()]
    joint_doc = _build(f"mme__{joint.id}__var0")[0].test_docs()[0]
    assert _store_key(joint_doc, "Is it red?") not in keys


def _store_key(doc: dict, text: str) -> str | None:
    wrapper = SimpleNamespace(pretrained="tiny", is_simple=False, system_prompt=None)
    messages = [{"role": "user", "content": [{"type": "text", "text": text}]}]
    return store_key(wrapper, "tiny_model", doc, messages, {"max_new_tokens": 8, "temperature": 0})


def test_clotho_aqa_wrapped_audio_keeps_its_rate_and_is_scored_by_the_base_metric(local_copies, wrap_cache):
    copy, _, docs = local_copies["clotho_aqa_test"]
    data = wrap_configs.data_override("clotho_aqa_test", copy.dataset_path)
    wrap_configs.write(
        "clotho_aqa_test", [catalogue().get("single_mute_a50"), catalogue().get("shortcut_text_only")], data
    )
    built, requests = _build("clotho_aqa_test__single_mute_a50__var0")
    arguments, doc = requests[1]
    (audio,) = arguments[2](doc)
    source = np.asarray(docs[1]["audio"]["array"], dtype=np.float32)
    rate = docs[1]["audio"]["sampling_rate"]
    assert rate == wrap_datasets.CLOTHO_RATE  # the copy's, as on the hub, kept (issue 36)
    assert audio["type"] == "audio" and audio["sampling_rate"] == rate and len(audio["array"]) == len(source)
    assert np.count_nonzero(audio["array"]) < np.count_nonzero(source)  # half of it muted
    assert arguments[0].startswith(docs[1]["question"])  # no text operator: the question as is
    # clotho_aqa has no process_results: the wrapped one scores exact_match as lmms-eval would
    out = built.process_results(doc, [docs[1]["answer"].upper() + "."])
    assert out["exact_match"] == 1.0 and out["faultline_trial"]["score"] == 1.0
    assert out["faultline_trial"]["adapter"] == "clotho_aqa@1"
    # a chat model gets lmms-eval's auto-messages from the wrapped functions: an audio part (the
    # base task alone hands chat models its audio dict as a "video" part, design §1.6)
    _, chat = _build("clotho_aqa_test__single_mute_a50__var0", task_type="chat")
    context, to_messages, *_ = chat[1][0]
    (message,) = to_messages(chat[1][1])
    assert [part["type"] for part in message["content"]] == ["audio", "text"]
    assert np.array_equal(message["content"][0]["url"]["array"], audio["array"])
    _, shortcut = _build("clotho_aqa_test__shortcut_text_only__var0")
    assert shortcut[0][0][2](shortcut[0][1]) == []  # the shortcut shows no media


@pytest.mark.slow
def test_lmms_eval_cli_writes_a_requested_wrapped_task_and_logs_the_trial(local_copies, wrap_cache, tmp_path):
    """The real ``lmms-eval`` CLI with its ``dummy`` model (about 20 s CPU, most of it lmms-eval's
    imports and index): a wrapped name that was never written is generated by our match_tasks
    step, and each per-sample line holds the base metric item and the trial."""
    copy, _, _ = local_copies["mme"]
    wrap_configs.write("mme", [catalogue().get("clean")], wrap_configs.data_override("mme", copy.dataset_path))
    name = "mme__bi_tv_drop_words_noise_t70_v70__var1"
    assert not (wrap_configs.task_folder("mme") / f"{name}.yaml").exists()
    lmms_eval(
        "--model", "dummy", "--tasks", name, "--limit", "4",
        "--log_samples", "--output_path", str(tmp_path / "out"), cwd=tmp_path,
    )  # fmt: skip
    results = json.loads(next((tmp_path / "out").rglob("*_results.json")).read_text())
    assert "mme_perception_score,none" in results["results"][name]
    lines = [json.loads(x) for x in next((tmp_path / "out").rglob(f"*_samples_{name}.jsonl")).read_text().splitlines()]
    assert [line["doc_id"] for line in lines] == [0, 1, 2, 3]
    for line in lines:
        trial = WrappedTrial.from_json(line["faultline_trial"])
        assert (trial.condition_id, trial.variant, trial.doc_id) == (
            "bi_tv_drop_words_noise_t70_v70",
            1,
            line["doc_id"],
        )
        assert line["mme_perception_score"]["question_id"] == trial.sample_id


def test_option_orders_move_the_texts_and_the_base_scores_the_order_shown(local_copies):
    _, _, docs = local_copies["worldsense"]
    name = "worldsense__order1_clean__var0"
    task = wrapped_task.wrapped(name)
    process_results = getattr(wrapped_task, f"process_results__{name}")
    for doc in docs:
        shown = wrapped_task.shown_doc(task, doc)
        texts = {c[:1]: c[3:] for c in doc["candidates"]}
        shown_texts = {c[:1]: c[3:] for c in shown["candidates"]}
        assert [c[:3] for c in shown["candidates"]] == [c[:3] for c in doc["candidates"]]  # letters stay
        assert shown_texts[shown["answer"]] == texts[doc["answer"]] and shown["answer"] != doc["answer"]
        assert shown_texts["A"] == texts["B"]  # SCEval's Latin square: shown j holds original j + 1
        assert process_results(doc, [shown["answer"]])["worldsense_score"]["score"] == 1.0
        assert process_results(doc, [doc["answer"]])["worldsense_score"]["score"] == 0.0


def test_faultline_wrap_lists_writes_and_says_what_does_not_apply(wrap_cache, local_copies, capsys):
    copy, _, _ = local_copies["mme"]
    argv = ["wrap", "mme", "--conditions", "clean", "single_mute_a50", "single_noise_v50", "--write"]
    assert commands.main([*argv, "--data", f"mme={copy.dataset_path}"]) == 0
    out = capsys.readouterr().out
    assert "mme (mme@1): 2 conditions, 4 tasks, written to" in out
    assert "  mme__single_noise_v50: mme__single_noise_v50__var0 mme__single_noise_v50__var1" in out
    assert "not applied: single_mute_a50: corrupts audio, which the task does not feed" in out
    manifest = json.loads((wrap_configs.task_folder("mme") / wrap_configs.MANIFEST).read_text())
    assert manifest["data"]["dataset_path"] == str(copy.dataset_path.resolve())
    assert commands.main(["wrap", "mme", "--conditions", "clen"]) == 1
    assert "did you mean clean?" in capsys.readouterr().err


def test_the_unwrapped_base_and_the_frames_option_are_written_and_recorded(wrap_cache, local_copies, capsys):
    """Issue 36: ``<task>__unwrapped`` (the base on the same data, run by the suite tags) beside the
    wrapped tasks; ``--frames`` recorded in the manifest, kept until changed, checked."""
    copy, _, _ = local_copies["mme"]
    argv = ["wrap", "mme", "--conditions", "clean", "--write", "--data", f"mme={copy.dataset_path}"]
    assert commands.main([*argv, "--frames", "sceval_grid"]) == 0
    assert "the base task on the same data (the report's base row): mme__unwrapped" in capsys.readouterr().out
    folder = wrap_configs.task_folder("mme")
    manifest = json.loads((folder / wrap_configs.MANIFEST).read_text())
    assert (manifest["frames"], manifest["unwrapped_task"]) == ("sceval_grid", "mme__unwrapped")
    assert wrap_configs.frames_of("mme") == "sceval_grid"
    text = (folder / "mme__unwrapped.yaml").read_text()
    assert f'include: "{base_task.base_yaml_path("mme")}"' in text and 'task: "mme__unwrapped"' in text
    assert '  - "mme__sceval_panel"' in text and '"mme__clean"' not in text  # the suites run it, not clean's tag
    assert f'dataset_path: "{copy.dataset_path.resolve()}"' in text  # the same local copy
    functions = re.findall(r"^(\w+): !function", text, re.M)
    assert functions == ["process_docs"]  # the base's own functions otherwise (audio decoded as wrapped)
    assert commands.main(argv) == 0 and wrap_configs.frames_of("mme") == "sceval_grid"  # kept
    assert commands.main([*argv, "--frames", "source"]) == 0 and wrap_configs.frames_of("mme") == "source"
    capsys.readouterr()
    assert wrap_configs.ensure(["mme__unwrapped"]) == ["mme__unwrapped"]
    with pytest.raises(wrap_configs.WrapNameError, match="frames='every'"):
        wrap_configs.wrap(["mme"], [catalogue().get("clean")], frames="every")
    with pytest.raises(SystemExit):
        commands.main([*argv, "--frames", "every"])
    # the unwrapped task's docs are the base's, in order, with no column of the wrapper's; audio decoded
    _, split, docs = local_copies["clotho_aqa_test"]
    unwrapped = wrapped_task._make_unwrapped_docs("clotho_aqa_test__unwrapped")(split)
    assert unwrapped.column_names == split.column_names
    assert [dict(d)["question"] for d in unwrapped] == [d["question"] for d in docs]
    assert np.array_equal(dict(unwrapped[0])["audio"]["array"], docs[0]["audio"]["array"])
