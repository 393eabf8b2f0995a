"""faultline-eval's ``lmms_eval.models`` entry point.

lmms-eval imports this when it builds its model registry (``import lmms_eval.models``, which
``lmms-eval eval`` does before it indexes tasks). Besides declaring our models, it makes
lmms-eval's TaskManager index the SCEval and C3PO task folders, because lmms-eval 0.7.3 has no task
entry point and its ``LMMS_EVAL_PLUGINS`` task path is applied too late in the CLI. So
``lmms-eval --model <any> --tasks sceval_...`` works right after ``pip install``, with no
``--include_path``. (``lmms-eval tasks list`` never imports the model registry, so it does not
show our tasks; ``sceval conditions`` does.)
"""

from __future__ import annotations

import functools

PACKAGE = "faultline_eval.model_wrappers"


def manifests() -> list:
    """Our models for lmms-eval's registry (and, as a side effect, our task folders)."""
    from lmms_eval.models.registry_v2 import ModelManifest

    install_task_path()
    return [
        ModelManifest(
            model_id="sceval_reference",
            chat_class_path=f"{PACKAGE}.reference.ReferenceChat",
            simple_class_path=f"{PACKAGE}.reference.ReferenceSimple",
        ),
        # The offline generator / audio typer / auditor of `c3po build` (demo-quality items).
        ModelManifest(model_id="c3po_build_reference", chat_class_path=f"{PACKAGE}.reference_build.BuildReferenceChat"),
        ModelManifest(model_id="sceval_gemini", chat_class_path=f"{PACKAGE}.gemini.GeminiChat"),
        # OpenAI-compatible endpoints (vLLM, vLLM-Omni) with the audio sent and checked (README, "Serving with vLLM").
        ModelManifest(model_id="sceval_openai", chat_class_path=f"{PACKAGE}.openai_chat.OpenAIChat"),
        # Adapters over lmms-eval's open omni wrappers (README, "Supported models").
        ModelManifest(
            model_id="faultline_qwen2_5_omni",
            chat_class_path=f"{PACKAGE}.qwen2_5_omni.Qwen2_5OmniChat",
            simple_class_path=f"{PACKAGE}.qwen2_5_omni.Qwen2_5OmniSimple",
        ),
        ModelManifest(
            model_id="faultline_qwen3_omni",
            chat_class_path=f"{PACKAGE}.qwen3_omni.Qwen3OmniChat",
            simple_class_path=f"{PACKAGE}.qwen3_omni.Qwen3OmniSimple",
        ),
        ModelManifest(
            model_id="faultline_minicpm_o",
            chat_class_path=f"{PACKAGE}.minicpm_o.MiniCPMOChat",
            simple_class_path=f"{PACKAGE}.minicpm_o.MiniCPMOSimple",
        ),
    ]


def install_task_path() -> None:
    """Wrap ``TaskManager.initialize_tasks`` once so it also indexes our task folders."""
    from lmms_eval.tasks import TaskManager

    if getattr(TaskManager.initialize_tasks, "_faultline", False):
        return
    original = TaskManager.initialize_tasks

    @functools.wraps(original)
    def initialize_tasks(self, include_path=None, include_defaults=True):
        from loguru import logger

        from c3po_plugin.taskgen import task_dirs as c3po_task_dirs
        from faultline_eval.tasks import TASKS_DIR
        from sceval_plugin import telemetry
        from sceval_plugin.plugins import PluginError
        from sceval_plugin.taskgen import task_dirs as sceval_task_dirs

        ours = []
        for protocol, task_dirs in (("sceval", sceval_task_dirs), ("c3po", c3po_task_dirs)):
            try:
                ours += task_dirs()
            except PluginError:  # only raised when strict mode (<PROJECT>_STRICT_PLUGINS) asks for it
                raise
            except Exception as exc:  # a broken third-party plugin must not break lmms-eval itself
                logger.error(f"faultline-eval: {protocol} plugin tasks unavailable ({type(exc).__name__}: {exc}); "
                             f"only the built-in {protocol} tasks are indexed")
                ours.append(TASKS_DIR / protocol)
        paths = [include_path] if isinstance(include_path, str) else list(include_path or [])
        paths += [str(d) for d in ours if str(d) not in paths]
        telemetry.RUN_CONTEXT["model"] = getattr(self, "model_name", None)
        return original(self, include_path=paths, include_defaults=include_defaults)

    initialize_tasks._faultline = True  # type: ignore[attr-defined]
    TaskManager.initialize_tasks = initialize_tasks
