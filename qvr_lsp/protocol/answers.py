"""Large answers turned into JSON off the event loop.

pygls turns every answer into JSON on the event loop: cattrs unstructures it,
then `json.dumps` calls back into Python for each object. The outline of a
5,000-line file (some 14,000 symbols, 0.9 MB of JSON) held the loop for
0.15-0.3 s that way, every edit and request waiting behind it, during a flood
of edits too. A feature that builds a large answer in a thread writes its JSON
there as well (`Serialized`), and `QvrProtocol` sends the text as it is.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Serialized:
    """An answer already written as JSON: the protocol sends `text` as the result."""

    text: str
