"""The probe profiles of C3PO §4.2 and Table 4, as rules over a model's probe summary.

The paper names the profiles by their signatures; the thresholds below are our reading of the
numbers it gives, written down so that they can be checked and changed:

* **audio-bypass** (Qwen2.5-Omni-3B/7B, Phi-4): about 87-95% of the attention budget on text
  (:data:`BYPASS_TEXT_SHARE` = 0.85) and an early commitment, the entropy minimum in the first
  third of the network (:data:`EARLY_DEPTH` = 1/3; the paper: 0.11-0.31);
* **fusion-attentive** (Gemma-3n): roughly twice the non-text share (:data:`FUSION_NONTEXT_SHARE`
  = 0.2; Gemma-3n: 0.151 + 0.115) and a late commitment, past the middle (:data:`LATE_DEPTH` = 0.5);
* **content-blind** on a modality (VITA-1.5 on images): its E3 fidelity two orders of magnitude
  below the cohort median (:data:`BLIND_FACTOR` = 0.01), decidable from E3 alone;
* **unclassified**: anything else, and every model whose E1 is blocked and is not content-blind.
"""

from __future__ import annotations

BYPASS_TEXT_SHARE = 0.85
EARLY_DEPTH = 1 / 3
FUSION_NONTEXT_SHARE = 0.2
LATE_DEPTH = 0.5
BLIND_FACTOR = 0.01


def classify(
    alpha_text: float | None,
    argmin_depth: float | None,
    fidelity: dict[str, float | None],
    cohort_fidelity: dict[str, float | None],
) -> tuple[str, str]:
    """(profile, the rule that decided it) from a model's mean E1 text share, mean argmin depth
    and mean E3 fidelity per modality, against the cohort's median fidelity per modality."""
    for modality in ("image", "audio"):
        mine, cohort = fidelity.get(modality), cohort_fidelity.get(modality)
        if mine is not None and cohort and mine < BLIND_FACTOR * cohort:
            return f"content-blind on {modality}", (
                f"{modality} fidelity {mine:.3g} < {BLIND_FACTOR} x cohort median {cohort:.3g}"
            )
    if alpha_text is None or argmin_depth is None:
        return "unclassified", "no E1 signature"
    if alpha_text >= BYPASS_TEXT_SHARE and argmin_depth < EARLY_DEPTH:
        return (
            "audio-bypass",
            f"alpha_text {alpha_text:.3f} >= {BYPASS_TEXT_SHARE}, argmin depth {argmin_depth:.2f} < 1/3",
        )
    if 1 - alpha_text >= FUSION_NONTEXT_SHARE and argmin_depth >= LATE_DEPTH:
        return "fusion-attentive", (
            f"non-text share {1 - alpha_text:.3f} >= {FUSION_NONTEXT_SHARE}, argmin depth "
            f"{argmin_depth:.2f} >= {LATE_DEPTH}"
        )
    return "unclassified", f"alpha_text {alpha_text:.3f}, argmin depth {argmin_depth:.2f} match neither signature"
