"""The one registry every plugin-filled table is built on (faultline_eval.core.registry); fast."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, replace

import pluggy
import pytest

from faultline_eval.core.plugin_host import PluginHost
from faultline_eval.core.registry import DIRECT, PluginError, Registry, UnknownNameError, did_you_mean
from faultline_eval.core.settings import Setting


@dataclass(frozen=True)
class Tool:
    name: str
    plugin: str = ""


class ToolRegistry(Registry[Tool]):
    def __init__(self) -> None:
        super().__init__("tool", clash_hint="; rename one")

    def add(self, tool: Tool) -> Tool:
        return self.register(tool.name, replace(tool, plugin=self.plugin), aliases={tool.name.upper(): "tool alias"})


def test_a_taken_name_or_alias_names_both_plugins_and_adds_nothing():
    tools = ToolRegistry()
    with tools.adding_for("'first' (distribution a 1)"):
        assert tools.add(Tool("hammer")).plugin == "'first' (distribution a 1)"
    assert tools.plugin == DIRECT and tools.owner("HAMMER") == "'first' (distribution a 1)"
    with tools.adding_for("'second' (distribution b 2)"):
        with pytest.raises(
            PluginError,
            match=r"^tool 'hammer' is registered by two plugins: 'first' \(distribution "
            r"a 1\) and 'second' \(distribution b 2\); rename one$",
        ):
            tools.add(Tool("hammer"))
        tools.add(Tool("saw"))
        with pytest.raises(PluginError, match="tool alias 'SAW' is registered by two plugins"):
            tools.register("other", Tool("other"), aliases={"SAW": "tool alias"})
    assert tools.names() == ["hammer", "saw"] and "other" not in tools and len(tools) == 2
    assert tools.get("HAMMER") is tools.get("hammer") and tools.find("nail") is None


def test_a_failing_block_is_undone_whole():
    tools = ToolRegistry()
    tools.add(Tool("hammer"))
    with pytest.raises(RuntimeError, match="half-way"):
        with tools.adding_for("'broken'"):
            tools.add(Tool("saw"))
            raise RuntimeError("half-way")
    assert tools.names() == ["hammer"] and "SAW" not in tools and tools.plugin == DIRECT
    tools.add(Tool("saw"))  # its names are free again
    assert tools.owner("saw") == DIRECT


class KnownError(RuntimeError):
    """What the callers of one registry catch today."""


class UnknownToolError(UnknownNameError, KnownError):
    pass


def test_an_unknown_name_lists_close_matches_and_is_the_callers_error():
    tools = Registry[Tool]("tool", unknown="workshop tool", error=UnknownToolError)
    for name in ("hammer", "hatchet", "saw"):
        tools.register(name, Tool(name))
    with pytest.raises(UnknownToolError) as raised:
        tools.get("hamer")
    assert str(raised.value) == (
        "unknown workshop tool 'hamer'; did you mean 'hammer'? (registered: hammer, hatchet, saw)"
    )
    assert isinstance(raised.value, KeyError) and isinstance(raised.value, KnownError)
    with pytest.raises(KeyError, match=r"^unknown workshop tool 'drill' \(registered: hammer, hatchet, saw\)$"):
        tools.get("drill")
    with pytest.raises(KeyError, match=r"unknown workshop tool \['x'\]"):  # not a name at all: no TypeError
        tools.get(["x"])
    assert did_you_mean("nosie", ["noise", "mute"]) == "did you mean 'noise'?" and did_you_mean("zzz", ["a"]) == ""


def test_the_plugin_host_rolls_back_a_failing_plugin_and_names_the_clash(monkeypatch, capsys):
    hookspec, hookimpl = pluggy.HookspecMarker("regtest"), pluggy.HookimplMarker("regtest")
    specs = types.ModuleType("regtest_specs")

    @hookspec
    def regtest_register_tools(registry):  # pragma: no cover - a specification
        """Add tools."""

    specs.regtest_register_tools = regtest_register_tools
    plugins = {}
    for name, adds, fails in (
        ("regtest_builtin", ["hammer"], False),
        ("regtest_half", ["saw", "drill"], True),
        ("regtest_clash", ["chisel", "hammer"], False),
        ("regtest_fine", ["saw"], False),
    ):
        module = types.ModuleType(name)

        def register(registry, adds=adds, fails=fails):
            for tool in adds:
                registry.add(Tool(tool))
            if fails:
                raise ValueError("broken after adding")

        module.regtest_register_tools = hookimpl(register)
        plugins[name] = module
        monkeypatch.setitem(sys.modules, name, module)
    switches = (
        Setting("REGTEST_DISABLE", None, "test host: built-ins only"),
        Setting("REGTEST_STRICT", None, "strict"),
    )
    host = PluginHost("regtest", specs, ["regtest_builtin"], *switches)
    for name in list(plugins)[1:]:  # the others as a third party's, in this order
        host.manager.register(plugins[name], name=name)
    tools = host.fill_registry("regtest_register_tools", ToolRegistry(), "tools")
    assert tools.names() == ["hammer", "saw"]  # the half-done and the clashing plugin left nothing
    assert tools.get("saw").plugin == "'regtest_fine'" and tools.get("hammer").plugin == "'regtest_builtin' (built in)"
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith(
        "warning: regtest plugin 'regtest_half' skipped: failed while registering tools: "
        "ValueError: broken after adding"
    )
    assert err[1] == (
        "warning: regtest plugin 'regtest_clash' skipped: tool 'hammer' is registered by two plugins: "
        "'regtest_builtin' (built in) and 'regtest_clash'; rename one"
    )
