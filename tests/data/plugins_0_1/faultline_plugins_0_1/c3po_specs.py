"""A generation spec as 0.1's ``c3po_register_generation_specs`` docstring described it:
``registry.add(GenerationSpec(...))`` from ``c3po_plugin.build.specs``."""

from c3po_plugin import hookimpl
from c3po_plugin.build.specs import GenerationSpec


@hookimpl
def c3po_register_generation_specs(registry):
    registry.add(
        GenerationSpec(
            "MY01",
            "EchoLocation",
            "COUNTERFACTUAL (Tier 2)",
            "video",
            logical_form="size(room | echo) != size(room | video); ask size(room)",
            example_scenario="A long reverberant clap over a video of a small bathroom.",
            generation_spec={
                "video": {
                    "source_dataset": "any indoor clip",
                    "selection_filter": {
                        "requirement": "an indoor scene whose room size is visible",
                        "match": {"tags_any": ["place"], "min_duration_s": 3},
                    },
                    "processing": "mute the clip and cut it to 6 s",
                    "actions": ["mute", "clip_max:6"],
                },
                "audio": {
                    "source_type": "sfx",
                    "content_logic": "a clap with the echo of a much larger room",
                    "constraints": "no speech",
                },
                "text": {"query_skeleton": "How large is the room the sound was recorded in?"},
            },
            aliases=("X_T2_001",),
        )
    )
