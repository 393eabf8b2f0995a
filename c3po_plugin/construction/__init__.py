"""C3PO benchmark construction (paper §3.1, Appendices A-E, G, I): one module per stage.

``specs`` (template generation specs) → ``select`` (base media) → ``generate`` (generator LLM) →
``classify`` (audio typing) → ``synthesize`` (speech / SFX / image backends) → ``audit`` →
``sample`` (human-evaluation sheet) → ``export`` (a ``datasets`` dataset the C3PO tasks load).
Every stage reads the ledgers of the stages before it and appends to its own
(:mod:`c3po_plugin.construction.ledger`), so each stage resumes and every rejection keeps its reason.
"""
