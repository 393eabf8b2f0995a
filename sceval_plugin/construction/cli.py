"""The ``sceval build`` command group: one subcommand per stage module."""

from __future__ import annotations

from sceval_plugin import construction
from sceval_plugin.construction import annotate, annotator_agreement, convert, manifest, pool, publish

# Each module defines ``add_parser(stages)``, adding its subcommand(s) with ``set_defaults(func=...)``.
STAGE_MODULES = (convert, pool, annotate, annotator_agreement, manifest, publish)


def add_build_parser(sub) -> None:
    build = sub.add_parser(
        "build",
        help="build a verified SCEval benchmark from source benchmarks (sceval build -h)",
        description=construction.__doc__,
    )
    stages = build.add_subparsers(dest="stage", required=True, metavar="STAGE")
    for module in STAGE_MODULES:
        module.add_parser(stages)
