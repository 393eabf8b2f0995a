"""Prototype (issue 29): generate the reference pages from the code, as an MkDocs hook.

``mkdocs.yml``: ``hooks: [docs/design/prototype/gen_reference.py]``. MkDocs (>= 1.4) calls
``on_files``; the pages are added in memory (``File.generated``), never written to ``docs/``.
``python gen_reference.py OUT`` writes the same pages to a folder (for the docs-vs-code test).
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from pathlib import Path

import c3po_plugin.cli
import c3po_plugin.hookspecs
import c3po_plugin.plugins
import faultline_eval.commands
import sceval_plugin.cli
import sceval_plugin.hookspecs
import sceval_plugin.plugins
from faultline_eval import judges
from faultline_eval.core import decode_cache, media, offline, paths, plugin_host, run_status, store

ROOT = Path(__file__).resolve().parents[3]
PARSERS = {
    "sceval": sceval_plugin.cli.build_parser,
    "c3po": c3po_plugin.cli.build_parser,
    "faultline": faultline_eval.commands.build_parser,
}


def faultline_eval_parser() -> argparse.ArgumentParser:
    """faultline-eval's own flags; the rest are lmms-eval 0.7.3's (linked, not copied)."""
    parser = argparse.ArgumentParser(prog="faultline-eval", add_help=False)
    run_status.add_failure_rate_argument(parser)
    return parser


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]):
    """Yield (command path, parser) for ``parser`` and every sub-command, depth first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                if child is not parser:  # aliases point at the same parser
                    yield from walk(child, (*path, name))


def options(parser: argparse.ArgumentParser):
    """The visible options and positionals (hidden old spellings, help=SUPPRESS, left out)."""
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        yield action


def cli_page() -> str:
    lines = ["# Command-line reference", "", "Generated from the argparse parsers; do not edit.", ""]
    parsers = {name: build() for name, build in PARSERS.items()}
    parsers["faultline-eval"] = faultline_eval_parser()
    for name, root in parsers.items():
        for path, parser in walk(root, (name,)):
            lines += [f"## `{' '.join(path)}`", "", (parser.description or "").strip(), ""]
            rows = list(options(parser))
            if not rows:
                continue
            lines += ["| option | default | help |", "|---|---|---|"]
            for action in rows:
                flag = ", ".join(action.option_strings) or action.metavar or action.dest
                default = "" if action.default in (None, argparse.SUPPRESS) else f"`{action.default}`"
                text = (action.help or "").replace("|", "\\|").replace("\n", " ")
                lines.append(f"| `{flag}` | {default} | {text} |")
            lines.append("")
    return "\n".join(lines)


def hooks_page() -> str:
    lines = ["# Plugin hooks", "", "Generated from the hookspecs; do not edit.", ""]
    for module in (sceval_plugin.hookspecs, c3po_plugin.hookspecs):
        lines += [f"## `{module.__name__}` (entry-point group `{module.PROJECT}`)", ""]
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if name.startswith(f"{module.PROJECT}_"):
                lines += [f"### `{name}{inspect.signature(fn)}`", "", inspect.cleandoc(fn.__doc__ or ""), ""]
    return "\n".join(lines)


#: Every setting, from the modules' own constants (one place each): name -> (where, default).
def settings() -> dict[str, tuple[str, str]]:
    rows = {
        paths.CACHE_ENV: ("faultline_eval/core/paths.py", "~/.cache/sceval"),
        plugin_host.DEBUG_ENV: ("faultline_eval/core/plugin_host.py", "unset (off)"),
        store.FSYNC_ENV: ("faultline_eval/core/store.py", store.DEFAULT_FSYNC),
        decode_cache.MEMORY_ENV: ("faultline_eval/core/decode_cache.py", str(decode_cache.DEFAULT_MEMORY_MB)),
        decode_cache.DISK_ENV: ("faultline_eval/core/decode_cache.py", str(decode_cache.DEFAULT_DISK_GB)),
        judges.JUDGE_ENV: ("faultline_eval/judges/__init__.py", judges.DEFAULT_JUDGE),
        judges.CACHE_ENV: ("faultline_eval/judges/__init__.py", "one file per judge id under $SCEVAL_CACHE"),
    }
    defaults = media.MediaLimits()
    for field, env in media.LIMIT_ENV.items():
        rows[env] = ("faultline_eval/core/media.py", str(getattr(defaults, field)))
    for env, value in offline.OFFLINE_DEFAULTS.items():
        rows[env] = ("faultline_eval/core/offline.py", value)
    for module in (sceval_plugin.plugins, c3po_plugin.plugins):
        rows[module.STRICT_ENV] = (module.__name__, "unset (off)")
        rows[module.DISABLE_AUTOLOAD_ENV] = (module.__name__, "unset (off)")
    return rows


def settings_page() -> str:
    lines = ["# Settings (environment variables)", "", "| variable | default | defined in |", "|---|---|---|"]
    for env, (where, default) in sorted(settings().items()):
        lines.append(f"| `{env}` | `{default}` | `{where}` |")
    return "\n".join(lines) + "\n"


def schema_page() -> str:
    schema = json.loads((ROOT / "faultline_eval/core/trial_schema.json").read_text())
    lines = ["# Trial record schema", "", schema["title"], ""]
    for kind, spec in schema["$defs"].items():
        lines += [
            f"## {kind}",
            "",
            spec.get("description", ""),
            "",
            "| field | type | required | description |",
            "|---|---|---|---|",
        ]
        required = set(spec.get("required", ()))
        for field, prop in spec["properties"].items():
            kind_ = prop.get("type", prop.get("const", prop.get("enum", "")))
            text = prop.get("description", "").replace("|", "\\|")
            lines.append(f"| `{field}` | `{kind_}` | {'yes' if field in required else ''} | {text} |")
        lines.append("")
    return "\n".join(lines)


PAGES = {
    "reference/cli.md": cli_page,
    "reference/hooks.md": hooks_page,
    "reference/settings.md": settings_page,
    "reference/trial-schema.md": schema_page,
}


def on_files(files, config):  # MkDocs hook
    from mkdocs.structure.files import File  # optional: only under mkdocs

    for uri, page in PAGES.items():
        files.append(File.generated(config, uri, content=page()))
    return files


if __name__ == "__main__":
    out = Path(sys.argv[1])
    for uri, page in PAGES.items():
        (out / uri).parent.mkdir(parents=True, exist_ok=True)
        (out / uri).write_text(page())
