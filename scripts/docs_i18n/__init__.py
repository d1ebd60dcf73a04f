"""The docs translation tool behind `scripts/translate_docs.py`, one way down:

- `pages`: front matter, sections, code masked as placeholders, hashes, atomic writes.
- `glossary`: terms (longest first), do-not-translate words, forbidden variants.
- `checks`: a translated section against its English section.
- `manifest`: the section hashes recorded per page and language; what each section needs.
- `model`: one section's request, its checks, one repair, the optional review.
- `run`: the modes (translate, --check, --adopt, --dry-run).
"""
