"""The judging page: one judge grades a blind sheet in a browser, one pair at a time and one key per grade,
on a page served on the loopback address (`server`); what it shows and where each grade goes (`pairs`); the
page itself, a static HTML file with its script and style (``static/``), which fetches JSON.

May import: ``judging``, ``golden``, ``files``, ``core``; reads and writes sheets only through ``judging``
(`judging.sheet_edits`). Never pytest.
"""

from __future__ import annotations
