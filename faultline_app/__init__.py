"""The top floor of faultline-eval: the command lines and the results viewer.

``sceval``, ``c3po``, ``faultline-eval`` and ``faultline`` (``sceval_cli``, ``c3po_cli``, ``eval_cli``,
``faultline_cli``) and the static results site (``viewer``) stand on the benchmarks
(:mod:`sceval_plugin`, :mod:`c3po_plugin`), the harness bindings (``faultline_eval.tasks``,
``faultline_eval.model_wrappers``) and the core (:mod:`faultline_eval`); nothing of ours imports this
package.
"""
