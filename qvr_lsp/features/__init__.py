"""Editor features: each module is its handlers, each a call into `qvr_core.ide` converted.

A feature's handler is `async def answer(session, params, view)`: `view` is what the
snapshot kind named by its entry in the handler table (`qvr_lsp/app.py`) gives it
(`analysis/kinds.py`), so a feature decides nothing about how fresh its answer is;
the dispatcher (`analysis/handlers.py`) guards it and answers its empty answer on a
failure. A module may list in `DEFERRED` the modules its handlers import on first use
rather than at start (`analysis/warmup.py` imports them once the first diagnostics are
out); its entries name them. Features never import the runs (`runs/`) nor the
composition root, and nothing below them imports a feature (`lint-imports`).
"""
