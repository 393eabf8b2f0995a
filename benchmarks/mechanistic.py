"""Cost of the mechanistic probes per sample against a plain greedy generate on the same model.

    python benchmarks/mechanistic.py [--checkpoint DIR] [--model faultline_qwen2_5_omni] [--repeat 3]
        [--max-new-tokens 8] [--device cpu]

Without ``--checkpoint`` the tiny random Qwen2.5-Omni of the tests (``faultline tiny-model``) is built in a
temporary folder.
Each round times, on the same C3PO demo docs and interleaved (so machine drift hits all alike):
the adapter's plain generation (``_answer``, greedy, ``max_new_tokens``, sdpa-free eager model),
then E1, E2 and E3. Per sample: the median over rounds after one warm-up; ratio = probe / plain.
Memory: E1's largest transient attention tensor (one layer's heads x query x key) and, on CUDA,
the peak allocated memory of each call.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import provenance

from faultline_eval.core.flag_spellings import add_argument


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument("--model", default="faultline_qwen2_5_omni")
    parser.add_argument("--repeat", type=int, default=3)
    add_argument(parser, "--max-new-tokens", old=["--max_new_tokens"], type=int, default=8)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--docs", type=int, default=2)
    parser.add_argument("--smoke", action="store_true", help=f"{provenance.SMOKE_HELP}: 1 doc, 1 round, 2 new tokens")
    parser.add_argument("--json", type=Path, metavar="PATH", help=provenance.JSON_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.docs, args.repeat, args.max_new_tokens = 1, 1, 2
    record = provenance.Record(__file__, peer="a plain greedy generate on the same model")

    import torch

    from c3po_plugin.mechanistic import spans
    from c3po_plugin.mechanistic.attention import probe_attention
    from c3po_plugin.mechanistic.fidelity import probe_fidelity
    from c3po_plugin.mechanistic.logit_lens import probe_logit_lens
    from c3po_plugin.mechanistic.runner import iter_docs, load_adapter

    checkpoint = args.checkpoint
    if checkpoint is None:
        from faultline_eval.model_wrappers.tiny_checkpoints import build_qwen2_5_omni

        checkpoint = str(build_qwen2_5_omni(tempfile.mkdtemp(prefix="tiny-qwen-omni-")))
    adapter = load_adapter(
        args.model, f"pretrained={checkpoint},device={args.device},attn_implementation=eager,store=none"
    )
    family = spans.family_of(adapter)
    docs = [messages for _, _, _, messages in iter_docs(["c3po_ic_t1"], args.docs)]
    reference = "the beeps count the red green blue shapes"
    n = args.max_new_tokens
    calls = {
        "plain generate": lambda m: adapter._answer(m, {"max_new_tokens": n, "temperature": 0}),
        "E1 attention": lambda m: probe_attention(adapter, family, m, spans.image_part_roles(m), max_new_tokens=n),
        "E2 logit lens": lambda m: probe_logit_lens(adapter, family, m, spans.image_part_roles(m), reference),
        "E3 fidelity (2 generations)": lambda m: probe_fidelity(adapter, m, reference, max_new_tokens=n),
    }
    cuda = args.device.startswith("cuda")
    times = {name: [] for name in calls}
    peaks = dict.fromkeys(calls, 0)
    attention_bytes = 0
    for round_index in range(args.repeat + 1):
        for name, call in calls.items():
            for messages in docs:
                if cuda:
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                start = time.perf_counter()
                result = call(messages)
                if cuda:
                    torch.cuda.synchronize()
                    peaks[name] = max(peaks[name], torch.cuda.max_memory_allocated())
                if round_index:
                    times[name].append(time.perf_counter() - start)
                if isinstance(result, dict) and "peak_attention_bytes" in result:
                    attention_bytes = max(attention_bytes, result["peak_attention_bytes"])
    plain = statistics.median(times["plain generate"])
    print(
        f"model {args.model} ({checkpoint}), device {args.device}, {len(docs)} docs x {args.repeat} rounds, "
        f"max_new_tokens {n}"
    )
    for name, values in times.items():
        median = statistics.median(values)
        memory = f", peak CUDA {peaks[name] / 2**20:.1f} MiB" if cuda else ""
        print(f"{name:30s} {median * 1000:9.1f} ms/sample   x{median / plain:5.2f} vs plain generate{memory}")
    print(f"E1 largest transient attention tensor: {attention_bytes / 2**20:.2f} MiB")
    for name, values in times.items():
        key = name.split(" (")[0].lower().replace(" ", "_")
        record.figure(f"{key}_ms", statistics.median(values) * 1000, "ms", f"{name} per sample, {args.device}")
        record.figure(f"{key}_ratio", statistics.median(values) / plain, "x", f"{name} / plain generate")
    record.write(args.json, smoke=args.smoke)
    return 0


if __name__ == "__main__":
    sys.exit(main())
