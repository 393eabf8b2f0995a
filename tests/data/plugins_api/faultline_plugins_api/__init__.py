"""The 0.1 plugins written against sceval_plugin.api and c3po_plugin.api (see ../README.md)."""
