"""faultline-eval's ``lmms_eval.models`` entry point.

lmms-eval imports this when it builds its model registry (``import lmms_eval.models``, which
``lmms-eval eval`` does before it indexes tasks). Besides declaring our models, it makes
lmms-eval's TaskManager index the SCEval task folders, because lmms-eval 0.7.3 has no task
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
        ModelManifest(model_id="sceval_gemini", chat_class_path=f"{PACKAGE}.gemini.GeminiChat"),
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

        from faultline_eval.tasks import TASKS_DIR
        from sceval_plugin import telemetry
        from sceval_plugin.taskgen import task_dirs

        try:
            ours = task_dirs()
        except Exception as exc:  # a broken third-party plugin must not break lmms-eval itself
            logger.error(f"faultline-eval: plugin tasks unavailable ({type(exc).__name__}: {exc}); "
                         "only the built-in SCEval tasks are indexed")
            ours = [TASKS_DIR / "sceval"]
        paths = [include_path] if isinstance(include_path, str) else list(include_path or [])
        paths += [str(d) for d in ours if str(d) not in paths]
        telemetry.RUN_CONTEXT["model"] = getattr(self, "model_name", None)
        return original(self, include_path=paths, include_defaults=include_defaults)

    initialize_tasks._faultline = True  # type: ignore[attr-defined]
    TaskManager.initialize_tasks = initialize_tasks
