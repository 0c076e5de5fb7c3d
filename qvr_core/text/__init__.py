"""A source text: positions in it (`span`), what the passes find there (`diagnostics`,
each under its code in the one registry, `rules`), the edits that change it (`edits`),
and how messages write sizes and counts (`units`).

The bottom layer: it imports nothing else of qvr, so every stage can report.
"""
