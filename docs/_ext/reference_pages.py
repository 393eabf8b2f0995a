"""The reference pages that are generated from the code, so they cannot go stale (issue 29).

A MkDocs hook (``mkdocs.yml``: ``hooks: [docs/_ext/reference_pages.py]``): ``on_files`` adds the
pages in memory (``File.generated``); nothing is written into ``docs/``. Run as a script,
``python docs/_ext/reference_pages.py OUT/`` writes the same pages under ``OUT/``.

- ``reference/cli.md``: every command and sub-command (``cli_walk.py``), its usage, description
  and options; each command's anchor is its words joined by ``-`` (``cli.md#sceval-report``).
- ``reference/hooks.md``: every ``<project>_*`` hook of the two hookspecs modules.
- ``reference/settings.md``: every environment variable of ``faultline_eval.core.settings``.
- ``reference/trial-schema.md``: one table per ``$defs`` entry of ``core/trial_schema.json``.
- ``reference/api/<module>.md``: one mkdocstrings page per module of ``docs/public-api.md``.
"""

from __future__ import annotations

import argparse
import html
import importlib
import inspect
import json
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

sys.path.insert(0, str(Path(__file__).parent))  # MkDocs loads this file by path

import cli_walk
import sphinx_roles

import c3po_plugin.hookspecs
import sceval_plugin.hookspecs

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GENERATED_NOTE = "*Generated from the code when the site is built; edit the code, not this page.*"

#: The tutorial on plugins, which also explains, once, what happens when a plugin fails.
PLUGIN_FAILURE_PAGE = "../tutorials/write-a-plugin.md"


#: A code span in a help string or docstring: ``x`` (reStructuredText) or `x` (Markdown).
CODE_SPAN = re.compile(r"``(.+?)``|`([^`]+)`")


def md(text: str) -> str:
    """Plain text (an argparse help string, a description) made safe for a Markdown table cell:
    one line, code spans kept as code, HTML and Markdown's special characters escaped elsewhere."""
    return around_code(text, escape, lambda span: code(span.group(1) or span.group(2)))


def cell(markdown: str) -> str:
    """Markdown (a docstring) as one table cell: one line, a ``|`` outside code spans escaped."""
    return around_code(markdown, lambda part: part.replace("|", "\\|"), lambda span: span.group(0))


def around_code(text: str, prose: Callable[[str], str], span: Callable[[re.Match[str]], str]) -> str:
    """``text`` on one line, ``prose`` applied to what lies outside its code spans, ``span`` to each."""
    text = " ".join(text.split())
    parts, end = [], 0
    for match in CODE_SPAN.finditer(text):
        parts += [prose(text[end : match.start()]), span(match)]
        end = match.end()
    return "".join([*parts, prose(text[end:])])


def escape(text: str) -> str:
    return re.sub(r"([\\`*_\[\]|])", r"\\\1", html.escape(text, quote=False))


def code(text: Any) -> str:
    """``text`` as inline code (the tables extension keeps a ``|`` inside a code span in its cell)."""
    text = str(text)
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def anchor(command: str) -> str:
    return command.replace(" ", "-")


def usage(parser: argparse.ArgumentParser) -> str:
    """The usage line, formatted at a fixed width (the terminal's width must not change the page)."""
    formatter = parser.formatter_class(prog=parser.prog, width=100)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def expanded_help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The help text as ``--help`` shows it (``%(default)s`` and the like filled in)."""
    if not action.help:
        return ""
    try:
        return parser._get_formatter()._expand_help(action)
    except (KeyError, TypeError, ValueError):
        return action.help


def option_row(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    names = ", ".join(action.option_strings) or action.metavar or action.dest
    if action.choices is not None and not isinstance(action.choices, dict):
        value = " \\| ".join(code(choice) for choice in action.choices)
    elif action.nargs == 0:
        value = ""
    elif not action.option_strings:  # a positional: its name is in the first column
        value = {"?": "optional", "*": "any number", "+": "one or more"}.get(action.nargs, "")
    else:
        metavar = action.metavar or (action.dest.upper() if action.option_strings else action.dest)
        value = code(" ".join(metavar) if isinstance(metavar, tuple) else metavar)
        if action.nargs in ("+", "*"):
            value += " ..."
    if (
        action.nargs == 0
        or action.default is None
        or action.default is False
        or action.default in (argparse.SUPPRESS, [], "")
    ):
        default = ""
    else:
        default = code(action.default)
    required = " (required)" if action.required and action.option_strings else ""
    return f"| {code(names)}{required} | {value} | {default} | {md(expanded_help(parser, action))} |"


def options_table(parser: argparse.ArgumentParser, actions: Sequence[argparse.Action]) -> list[str]:
    if not actions:
        return []
    rows = [option_row(parser, action) for action in actions]
    return ["| option | value | default | description |", "|---|---|---|---|", *rows, ""]


def command_section(
    command: str, parser: argparse.ArgumentParser, summary: str, actions: Sequence[argparse.Action]
) -> list[str]:
    level = "#" * min(2 + command.count(" "), 4)
    lines = [f"{level} `{command}` {{#{anchor(command)}}}", ""]
    text = parser.description or summary
    if text:
        lines += [md(text), ""]
    lines += ["<!-- example: skip output -->", "```text", usage(parser), "```", ""]
    children = cli_walk.subcommands(parser)
    if children:
        lines += ["| sub-command | what it does |", "|---|---|"]
        lines += [
            f"| [`{command} {name}`](#{anchor(f'{command} {name}')}) | {md(text)} |" for name, text in children.items()
        ]
        lines.append("")
    return lines + options_table(parser, actions)


def cli_page(parsers: dict[str, argparse.ArgumentParser] | None = None) -> str:
    parsers = parsers if parsers is not None else cli_walk.parsers()
    lines = [
        "# Command-line reference",
        "",
        GENERATED_NOTE,
        "",
        "Every command and sub-command of `sceval`, `c3po`, `faultline` and `faultline-eval`, with every option "
        "its `--help` shows. Old snake_case spellings of our flags (`--output_path`) still work, with a "
        "deprecation note, and are not listed. `faultline-eval` takes [lmms-eval's flags](#lmms-eval) "
        "(listed at the end) plus its own.",
        "",
    ]
    summaries: dict[str, str] = {}
    for command, parser in parsers.items():
        for name, text in cli_walk.subcommands(parser).items():
            summaries[f"{command} {name}"] = text
    lmms = parsers.get("lmms-eval")
    for command, parser in parsers.items():
        if command in ("faultline-eval", "faultline eval", "lmms-eval"):
            continue  # below; `faultline eval` is faultline-eval (and would take its anchor)
        lines += command_section(command, parser, summaries.get(command, ""), cli_walk.visible_actions(parser))
    if "faultline-eval" in parsers:
        own = cli_walk.visible_actions(cli_walk.faultline_eval_own_parser())
        lines += command_section("faultline-eval", parsers["faultline-eval"], "", own)
        lines += [
            "and every [lmms-eval flag](#lmms-eval): `faultline-eval` runs lmms-eval's evaluation with them, "
            "and exits 1 when the run failed. `faultline eval ARGS` is the same command as `faultline-eval ARGS`.",
            "",
        ]
    if lmms is not None:
        lines += [
            "## `lmms-eval` {#lmms-eval}",
            "",
            "These flags are lmms-eval 0.7.3's (the harness this project plugs into), not ours: they are listed "
            "because `faultline-eval` passes them through. lmms-eval documents them; they keep its spelling "
            "(`--output_path`, `--log_samples`).",
            "",
            "<!-- example: skip output -->",
            "```text",
            usage(lmms),
            "```",
            "",
            *options_table(lmms, cli_walk.visible_actions(lmms)),
        ]
    return "\n".join(lines)


def docstring(text: str | None, module: str, scope: str = "") -> str:
    """A docstring as Markdown: dedented, Sphinx roles resolved from ``module`` (and its class
    ``scope``)."""
    return sphinx_roles.rewrite(inspect.cleandoc(text or ""), sphinx_roles.module_resolver(module, scope))


def hooks(module: ModuleType) -> list[tuple[str, Callable[..., Any]]]:
    """The hook specifications of a hookspecs module, in source order: its functions named
    ``<PROJECT>_*``."""
    found = [
        (name, fn)
        for name, fn in vars(module).items()
        if name.startswith(f"{module.PROJECT}_") and inspect.isfunction(fn) and fn.__module__ == module.__name__
    ]
    return sorted(found, key=lambda item: item[1].__code__.co_firstlineno)


def signature(fn: Callable[..., Any]) -> str:
    """``def name(arg: Annotation) -> Return``, annotations as written in the source."""
    sig = inspect.signature(fn)

    def shown(annotation: Any) -> str:
        return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)

    params = [
        param.name if param.annotation is param.empty else f"{param.name}: {shown(param.annotation)}"
        for param in sig.parameters.values()
    ]
    returns = "" if sig.return_annotation is sig.empty else f" -> {shown(sig.return_annotation)}"
    return f"def {fn.__name__}({', '.join(params)}){returns}"


HOOKSPECS = (sceval_plugin.hookspecs, c3po_plugin.hookspecs)


def hooks_page(modules: Iterable[ModuleType] = HOOKSPECS) -> str:
    lines = [
        "# Plugin hooks",
        "",
        GENERATED_NOTE,
        "",
        "A plugin is a module with functions marked `@hookimpl`, named by an entry point of the group its hooks "
        f"belong to. [Write a plugin]({PLUGIN_FAILURE_PAGE}) walks through a plugin of each kind and says what "
        "happens when a plugin fails (it raises, clashes with another plugin or is malformed).",
        "",
    ]
    for module in modules:
        lines += [
            f"## `{module.__name__}` {{#{module.PROJECT}}}",
            "",
            f"Entry-point group `{module.PROJECT}`; marker `{module.PROJECT}_plugin.hookimpl`.",
            "",
        ]
        for name, fn in hooks(module):
            lines += [
                f"### `{name}` {{#{name}}}",
                "",
                "<!-- example: skip output -->",
                "```python",
                signature(fn),
                "```",
                "",
                docstring(fn.__doc__, module.__name__),
                "",
            ]
    return "\n".join(lines)


class Setting(Protocol):
    """What the settings page reads of ``faultline_eval.core.settings.Setting`` (and its
    ``group``, the heading it is listed under, where it has one)."""

    name: str
    default: str | None
    doc: str
    choices: tuple[str, ...]


SETTINGS_MODULE = "faultline_eval.core.settings"


def declared_settings() -> tuple[Sequence[Setting], Sequence[Setting]]:
    """The project's settings and the other tools' variables it reads (``THIRD_PARTY``)."""
    settings = importlib.import_module(SETTINGS_MODULE)
    return settings.SETTINGS, getattr(settings, "THIRD_PARTY", ())


def settings_table(settings: Iterable[Setting]) -> list[str]:
    lines = ["| variable | default | values | what it sets |", "|---|---|---|---|"]
    for setting in settings:
        default = code(setting.default) if setting.default not in (None, "") else "unset"
        values = ", ".join(code(choice) for choice in setting.choices)
        text = cell(docstring(setting.doc, type(setting).__module__))
        lines.append(f"| `{setting.name}` {{#{setting.name}}} | {default} | {values} | {text} |")
    return [*lines, ""]


def settings_page(settings: Sequence[Setting] | None = None, third_party: Sequence[Setting] = ()) -> str:
    """The settings, in declaration order, under their ``group`` headings (in order of first
    appearance), then the other tools' variables the project reads."""
    if settings is None:
        settings, third_party = declared_settings()
    lines = [
        "# Settings",
        "",
        GENERATED_NOTE,
        "",
        "Every environment variable the project reads, with its default (what the code does when it is unset "
        f"or blank). Each is declared once, in [`{SETTINGS_MODULE}`](api/{SETTINGS_MODULE}.md) or its benchmark's "
        "package (`sceval_plugin.sceval_environment`, `c3po_plugin.c3po_environment`), which the code reads it "
        "through; the guides explain when to set which. Link to one as `settings.md#NAME`.",
        "",
    ]
    groups: dict[str, list[Setting]] = {}
    for setting in settings:
        groups.setdefault(getattr(setting, "group", ""), []).append(setting)
    for group, members in groups.items():
        lines += [f"## {group}", ""] if group else []
        lines += settings_table(members)
    if third_party:
        lines += ["## Read, not ours", "", "Other tools' variables that the project reads too.", ""]
        lines += settings_table(third_party)
    return "\n".join(lines)


TRIAL_SCHEMA = ROOT / "faultline_eval" / "core" / "trial_schema.json"
#: The module that reads and writes trial entries; each benchmark's trial type (a ``$defs`` name) lives in its own.
TRIAL_MODULE = "faultline_eval.core.trial"


def trial_module(kind: str) -> str:
    """The module defining the trial type ``kind`` (a ``$defs`` name), found among the registered
    kinds (importing the benchmark packages registers theirs)."""
    kinds = importlib.import_module(TRIAL_MODULE).TRIAL_KINDS
    return next((k.trial.__module__ for k in kinds if k.trial.__name__ == kind), TRIAL_MODULE)


def schema_type(prop: dict[str, Any]) -> str:
    if "const" in prop:
        return code(json.dumps(prop["const"]))
    if "enum" in prop:
        return " \\| ".join(code(json.dumps(value)) for value in prop["enum"])
    kind = prop.get("type", "")
    kinds = kind if isinstance(kind, list) else [kind]
    shown = []
    for one in kinds:
        if one == "array" and "items" in prop:
            one = f"array of {prop['items'].get('type', 'any')}"
        shown.append(one)
    return " \\| ".join(code(one) for one in shown if one) or "any"


def schema_page(path: Path = TRIAL_SCHEMA) -> str:
    schema = json.loads(path.read_text())
    lines = [
        "# Trial record schema",
        "",
        GENERATED_NOTE,
        "",
        f"{md(schema.get('title', '')).rstrip('.')}. The JSON Schema is `faultline_eval/core/trial_schema.json` ({code(schema.get('$id', ''))}); "
        "[`faultline_eval.core.trial`](api/faultline_eval.core.trial.md) reads and writes it; each benchmark "
        "registers its trial type there.",
        "",
    ]
    for kind, spec in schema["$defs"].items():
        required = set(spec.get("required", ()))
        lines += [
            f"## `{kind}` {{#{kind}}}",
            "",
            docstring(spec.get("description", ""), trial_module(kind), kind),
            "",
            "| field | type | required | description |",
            "|---|---|---|---|",
        ]
        for field, prop in spec["properties"].items():
            text = cell(docstring(prop.get("description", ""), trial_module(kind), kind))
            lines.append(f"| `{field}` | {schema_type(prop)} | {'yes' if field in required else ''} | {text} |")
        lines.append("")
    return "\n".join(lines)


PUBLIC_API = DOCS / "public-api.md"


def public_modules(path: Path = PUBLIC_API) -> dict[str, str]:
    """The modules ``docs/public-api.md``'s tables list, each with what the table says of it
    (an import like ``sceval_plugin.hookimpl`` counts for its module, ``sceval_plugin``)."""
    modules: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not line.lstrip().startswith("|") or cells[0] in ("Import", "") or set(cells[0]) <= {"-"}:
            continue
        for name in re.findall(r"`([\w.]+)`", cells[0]):
            if "." not in name:
                continue
            module = next(
                (prefix for prefix in prefixes(name) if is_module(prefix)),
                None,
            )
            if module is None:
                raise ValueError(f"{path}: {name!r} names no module")
            modules.setdefault(module, [])
            if cells[1] not in modules[module]:
                modules[module].append(cells[1])
    return {module: "; ".join(texts) for module, texts in modules.items()}


def prefixes(dotted: str) -> list[str]:
    parts = dotted.split(".")
    return [".".join(parts[:cut]) for cut in range(len(parts), 0, -1)]


def is_module(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def api_page(module: str, summary: str) -> str:
    return "\n".join(
        [
            f"# `{module}`",
            "",
            f"{summary}. Part of the [public API](../../public-api.md).",
            "",
            f"::: {module}",
            "",
        ]
    )


def pages() -> dict[str, Callable[[], str]]:
    """Every generated page: its path under ``docs/`` -> a function that writes it."""
    found: dict[str, Callable[[], str]] = {
        "reference/cli.md": cli_page,
        "reference/hooks.md": hooks_page,
        "reference/settings.md": settings_page,
        "reference/trial-schema.md": schema_page,
    }
    for module, summary in public_modules().items():
        found[f"reference/api/{module}.md"] = lambda module=module, summary=summary: api_page(module, summary)
    return found


#: The nav section (``mkdocs.yml``) that lists the API pages; the hook fills it in.
API_NAV_SECTION = "Python API"


def api_nav(nav: list[Any]) -> list[Any]:
    """``nav`` with its ``Python API`` section listing one page per public module."""
    found = False

    def fill(items: list[Any]) -> list[Any]:
        nonlocal found
        filled = []
        for item in items:
            if isinstance(item, dict):
                item = dict(item)
                for title, value in item.items():
                    if title == API_NAV_SECTION:
                        found = True
                        item[title] = [{module: f"reference/api/{module}.md"} for module in public_modules()]
                    elif isinstance(value, list):
                        item[title] = fill(value)
            filled.append(item)
        return filled

    filled = fill(nav)
    if not found:
        raise ValueError(f"mkdocs.yml's nav has no {API_NAV_SECTION!r} section for the API pages")
    return filled


def on_config(config: Any) -> Any:
    """MkDocs hook: list the API pages in the nav (``docs/public-api.md`` decides which)."""
    config["nav"] = api_nav(config["nav"])
    return config


def on_files(files: Any, config: Any) -> Any:
    """MkDocs hook: add the generated pages (an existing file of the same name is an error)."""
    from mkdocs.structure.files import File  # optional: only under MkDocs

    for uri, page in pages().items():
        if files.get_file_from_path(uri) is not None:
            raise ValueError(f"docs/{uri} is generated by docs/_ext/reference_pages.py; remove the file")
        files.append(File.generated(config, uri, content=page()))
    return files


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the generated reference pages under OUT.")
    parser.add_argument("out", type=Path, help="folder to write reference/*.md into")
    out = parser.parse_args(argv).out
    for uri, page in pages().items():
        (out / uri).parent.mkdir(parents=True, exist_ok=True)
        (out / uri).write_text(page())
        print(out / uri)
    return 0


if __name__ == "__main__":
    sys.exit(main())
