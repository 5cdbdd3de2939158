"""MkDocs hook: ``{{ readme("Section title") }}`` in a page is replaced by that ``## `` section of
the repository's README.md (its text without the heading), so the user guide is built from the
README and never copied by hand. An unknown title fails the build."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
DIRECTIVE = re.compile(r"\{\{\s*readme\(\"([^\"]+)\"\)\s*\}\}")


def readme_section(title: str) -> str:
    text = README.read_text()
    m = re.search(rf"^## {re.escape(title)}[^\n]*\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if m is None:
        raise ValueError(f"README.md has no section starting with '## {title}'")
    return _repository_links(m.group(1).strip()) + "\n"


LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")


def _repository_links(text: str) -> str:
    """The README links files of the repository by relative path (``benchmarks/results/x.png``),
    which are not part of the site: they are named as paths instead (web links are kept)."""

    def sub(m):
        bang, label, target = m.groups()
        if re.match(r"[a-z]+://|#|mailto:", target):
            return m.group(0)
        return f"{label} (`{target}` in the repository)" if not bang else f"*(figure `{target}` in the repository)*"

    return LINK.sub(sub, text)


def on_page_markdown(markdown, page, config, files, **kwargs):
    return DIRECTIVE.sub(lambda m: readme_section(m.group(1)), markdown)
