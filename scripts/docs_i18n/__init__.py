"""The documentation translation pipeline behind `scripts/translate_docs.py`.

Each stage is a small module:

- `front_matter`: split YAML front matter from the body; build the translated front matter.
- `markdown_mask`: replace fenced code blocks and inline code by placeholders, and restore them.
- `sections`: split a page at `## ` headings and hash each section.
- `headings`: the English heading ids (MkDocs' default slugify) and pinning them on translations.
- `glossary` / `prompt`: the maintainers' data files turned into the model's instructions.
- `checks`: structure checks of a draft (or of a whole translated page) against the English.
- `manifest`: the committed record of which English section hashes each translation came from.
- `atomic`: atomic file writes.
- `pages`: which English pages exist and where their translations live.
- `translator`: one model call with retries (exponential backoff, jitter, Retry-After).
- `planning`: what a run must do (which pages, languages and sections need the model).
- `runner`: running a plan with bounded concurrency: model, checks, repairs, writes.
- `status`: the commands without a model: `--check`, `--adopt`, `--dry-run`.
- `report`: progress lines or a progress bar, and the closing summary.
- `tokens`: token estimates and cost for `--dry-run` and the summary.
"""

__all__: list[str] = []
