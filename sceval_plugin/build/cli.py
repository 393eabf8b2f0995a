"""The ``sceval build`` command group: one subcommand per stage module."""

from __future__ import annotations

import importlib

# Each module defines ``add_parser(stages)``, adding its subcommand(s) with ``set_defaults(func=...)``.
STAGE_MODULES: tuple[str, ...] = ("convert", "pool", "annotate", "agreement", "manifest", "publish")


def add_build_parser(sub) -> None:
    build = sub.add_parser("build", help="build a verified SCEval benchmark from source benchmarks (sceval build -h)",
                           description=importlib.import_module("sceval_plugin.build").__doc__)
    stages = build.add_subparsers(dest="stage", required=True, metavar="STAGE")
    for name in STAGE_MODULES:
        importlib.import_module(f"sceval_plugin.build.{name}").add_parser(stages)
