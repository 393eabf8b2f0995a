"""0.1 README, "Adding your own template", verbatim."""

# my_package/c3po_templates.py       setup.cfg: [options.entry_points]  c3po = mine = my_package.c3po_templates
from c3po_plugin import Template, hookimpl


@hookimpl
def c3po_register_templates(registry):
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
