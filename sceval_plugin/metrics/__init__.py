"""SCEval statistics and protocol numbers: pure functions over a trial table (reused by C3PO)."""

from sceval_plugin.metrics.protocol import (
    TRIAL_COLUMNS,
    ConditionInfo,
    Numbers,
    add_drops,
    catalogue_info,
    check_comparable,
    comparisons,
    compute,
    condition_summary,
    model_diagnostics,
    option_order_summary,
    panel_summary,
    per_sample,
    trials_frame,
)
from faultline_eval.core.stats import (
    bootstrap_means,
    bootstrap_p_value,
    holm,
    least_squares_slope,
    mcnemar_exact,
    paired_comparisons,
    percentile_interval,
    resample_weights,
)

__all__ = [
    "TRIAL_COLUMNS", "ConditionInfo", "Numbers", "add_drops", "bootstrap_means", "bootstrap_p_value",
    "catalogue_info", "check_comparable", "comparisons", "compute", "condition_summary", "holm",
    "least_squares_slope", "mcnemar_exact", "model_diagnostics", "option_order_summary", "paired_comparisons",
    "panel_summary", "per_sample", "percentile_interval", "resample_weights", "trials_frame",
]
