"""The 0.1 template plugin, through the API."""

from c3po_plugin.api import Template, TemplateRegistry, hookimpl


@hookimpl
def c3po_register_templates(registry: TemplateRegistry) -> None:
    registry.add(
        Template(
            "MY01",
            "EchoLocation",
            "cc",
            2,
            "video",
            "The echo implies one room size, the video shows another; the question asks the room's size.",
        )
    )
