"""Mechanistic probes on open omni models (C3PO §4, Appendix F.1): where a model loses a modality.

* :mod:`.spans` — one modality-span function per model family, behind a registry; models whose
  forward path hides the spans are *blocked* with their architectural reason;
* :mod:`.attention` — E1, attention mass per modality per layer, between-modality entropy;
* :mod:`.logit_lens` — E2, logit-lens latent recovery at media positions;
* :mod:`.fidelity` — E3, caption fidelity (ROUGE-1 recall of content words);
* :mod:`.profiles` — the paper's profile rules (audio-bypass, fusion-attentive, content-blind);
* :mod:`.runner` / :mod:`.report` / :mod:`.cli` — ``faultline probe e1|e2|e3|all`` and
  ``faultline probe report``.

Models load through our lmms-eval adapters (``model_wrappers/``); every probe runs the adapter's
own ``_answer`` path with hooks on its language model, so what is probed is what is evaluated.
"""
