"""The analysis room: what is known about the open documents, and how fresh an answer is.

The analyzer checks each document off the event loop (`analyzer.py`), the snapshot
kinds say which of its analyses a request may answer from (`kinds.py`), and the
handler table's entries are dispatched by one function (`handlers.py`) with the
`Session` every handler gets (`session.py`). Beside them: the workspace scans, the
large-document child, the commands' sources, and how the server starts a Python child
(`children.py`, `lifeline.py`; the inference worker above uses them too). It imports
the protocol room, never a feature or the runs. Importing this package imports none
of its modules (a child process imports `lifeline` alone).
"""
