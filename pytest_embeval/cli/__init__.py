"""``embeval``, the command line of the judging afternoon and of filling the cache at scale: the command and
its parser (`embeval`), the judging subcommands (`judging_commands`), the LLM judge's
(`llm_judge_commands`), the judging page's (`judge_page_command`), seeds, dated merges and refresh
(`seeds_and_refresh`), embed and import (`cache_commands`), the cache's stats, verify and prune
(`cache_upkeep`), drawing queries and a corpus from production (`sample_commands`), and what they share
(`support`).

May import: anything but ``plugin``.
"""

from __future__ import annotations
