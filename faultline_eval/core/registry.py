"""One registry for everything plugins add by name: operators, conditions, probes, converters,
templates, generation specs and synthesis backends.

A :class:`Registry` maps names (and aliases) to items and owns the three things every such table
needs: a **duplicate check** that names both plugins, **plugin attribution** (who added each name)
and **rollback** (a plugin that fails half-way leaves nothing behind). An unknown name raises one
error, :class:`UnknownNameError`, whose message lists the close matches.

Declaring a registry: subclass ``Registry[Item]``, pass the noun its messages use, and give it
the ``add`` method the plugin hook documents; ``add`` checks what only this kind of item can get
wrong, stamps the item with :attr:`Registry.plugin` and hands it to :meth:`Registry.register`::

    class ToolRegistry(Registry[Tool]):
        def __init__(self) -> None:
            super().__init__("tool")

        def add(self, tool: Tool) -> Tool:
            if not tool.name.isidentifier():
                raise PluginError(f"tool name {tool.name!r} must be an identifier")
            return self.register(tool.name, replace(tool, plugin=self.plugin))

Filling it: the plugin host (:meth:`faultline_eval.core.plugin_host.PluginHost.fill_registry`)
calls every plugin's hook inside :meth:`Registry.adding_for`, which attributes what the hook adds
to that plugin and undoes all of it if the hook raises. Code outside a hook adds as
:data:`DIRECT`::

    tools = host.fill_registry("my_register_tools", ToolRegistry(), "tools")
    tools.get("hammer")   # or UnknownNameError: "unknown tool 'hamer'; did you mean 'hammer'? ..."

A table made of several registries (one per kind of backend, say) fills the same way if it has an
``adding_for`` that enters each part's (see :class:`Fillable`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Generic, Protocol, TypeVar

__all__ = [
    "DIRECT",
    "Fillable",
    "PluginError",
    "PluginRegistry",
    "Registry",
    "UnknownNameError",
    "close_matches",
    "did_you_mean",
]

#: Who adds outside any plugin's hook (a test, a script building a registry by hand).
DIRECT = "<direct>"
#: At most this many known names are listed in an unknown-name message; longer lists are counted.
LISTED_NAMES = 40

Item = TypeVar("Item")
Added = TypeVar("Added", contravariant=True)


class PluginError(RuntimeError):
    """A plugin could not be loaded, or two plugins claim the same name."""


def close_matches(name: str, known: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """The names in ``known`` that look like ``name`` (a typo's intended word), best first."""
    return difflib.get_close_matches(name, list(known), n=n, cutoff=cutoff)


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"did you mean 'noise'?"`` for the close matches of ``name`` in ``known``; ``""`` if none."""
    close = close_matches(name, known)
    return f"did you mean {', '.join(map(repr, close))}?" if close else ""


class UnknownNameError(KeyError):
    """No plugin registered that name. Registries whose callers catch another error raise a
    subclass that is that error too (e.g. ``class UnknownConverterError(UnknownNameError,
    BuildError)``), so existing ``except`` clauses keep working."""

    def __init__(self, kind: str, name: object, known: Iterable[str], also_known: Iterable[str] = ()) -> None:
        """``known``: the names listed; close matches are looked for among them and ``also_known``
        (aliases)."""
        self.kind, self.name, self.known = kind, name, sorted(known)
        hint = did_you_mean(str(name), [*self.known, *also_known])
        listed = (
            (", ".join(self.known) if len(self.known) <= LISTED_NAMES else f"{len(self.known)} names")
            if self.known
            else "none"
        )
        super().__init__(f"unknown {kind} {name!r}" + (f"; {hint}" if hint else "") + f" (registered: {listed})")

    def __str__(self) -> str:  # KeyError would quote the message like a dict key
        return str(self.args[0])


class Fillable(Protocol):
    """What the plugin host needs of a registry: a way to attribute additions to a plugin and
    undo them if its hook fails."""

    def adding_for(self, plugin: str) -> AbstractContextManager[None]: ...


class PluginRegistry(Protocol[Added]):
    """What a registration hook's ``registry`` argument offers a plugin: ``registry.add(item)``."""

    def add(self, item: Added, /) -> object: ...


class Registry(Generic[Item]):
    """Names (and aliases) -> items, filled by plugins; see the module docstring.

    Args:
        kind: the noun of messages about a name, e.g. ``"operator"``:
            ``operator 'noise' is registered by two plugins: ...``.
        unknown: the noun of the unknown-name message, if not ``kind`` (``"SCEval condition"``).
        error: the :class:`UnknownNameError` subclass :meth:`get` raises.
        clash_hint: appended to the duplicate-name message (what the user can do about it).
    """

    def __init__(
        self,
        kind: str,
        *,
        unknown: str | None = None,
        error: type[UnknownNameError] = UnknownNameError,
        clash_hint: str = "",
    ) -> None:
        self.kind, self.unknown_kind, self.error, self.clash_hint = kind, unknown or kind, error, clash_hint
        #: The plugin adding now (its description), named in clashes and stamped on items.
        self.plugin = DIRECT
        self._items: dict[str, Item] = {}  # primary name -> item, in registration order
        self._names: dict[str, str] = {}  # every key (name or alias) -> primary name
        self._owners: dict[str, str] = {}  # every key -> the plugin that registered it

    def register(self, name: str, item: Item, *, aliases: Mapping[str, str] | None = None) -> Item:
        """Add ``item`` as ``name``, and under each alias (alias -> its noun in a clash message);
        if any of those keys is taken, nothing is added and :class:`PluginError` names both
        plugins."""
        keys = self.check_free(name, aliases)
        self._items[name] = item
        for key in keys:
            self._names[key], self._owners[key] = name, self.plugin
        return item

    def check_free(self, name: str, aliases: Mapping[str, str] | None = None) -> dict[str, str]:
        """Raise the clash :meth:`register` would raise, now (before costlier checks of an item);
        returns the keys to register, each with its noun."""
        keys = {name: self.kind, **(aliases or {})}
        for key, what in keys.items():
            if key in self._names:
                raise PluginError(
                    f"{what} {key!r} is registered by two plugins: {self._owners[key]} and "
                    f"{self.plugin}{self.clash_hint}"
                )
        return keys

    def find(self, key: object) -> Item | None:
        """The item registered as ``key`` (a name or an alias), or None."""
        name = self._names.get(key) if isinstance(key, str) else None
        return None if name is None else self._items[name]

    def get(self, key: object) -> Item:
        """The item registered as ``key``; an unknown key raises the registry's ``error`` (an
        :class:`UnknownNameError`) with close matches."""
        found = self.find(key)
        if found is None:
            raise self.error(self.unknown_kind, key, self._items, self._names.keys() - self._items.keys())
        return found

    def owner(self, key: str) -> str:
        """The plugin that registered ``key``."""
        return self._owners[key]

    def names(self) -> list[str]:
        """Primary names, in registration order."""
        return list(self._items)

    @contextmanager
    def adding_for(self, plugin: str) -> Iterator[None]:
        """Attribute what is added in this block to ``plugin``; if the block raises, undo it all."""
        saved = dict(self._items), dict(self._names), dict(self._owners)
        self.plugin = plugin
        try:
            yield
        except BaseException:
            self._items, self._names, self._owners = saved
            raise
        finally:
            self.plugin = DIRECT

    def __iter__(self) -> Iterator[Item]:
        return iter(self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self._names
