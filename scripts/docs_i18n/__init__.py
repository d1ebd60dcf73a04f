"""The documentation translation pipeline behind `scripts/translate_docs.py`.

Each stage is a small module:

- `front_matter`: split YAML front matter from the body; build the translated front matter.
- `markdown_mask`: replace fenced code blocks and inline code by placeholders, and restore them;
  list Mermaid labels for translation and rebuild the diagram from the English code.
- `sections`: split a page at `## ` headings and hash each section.
- `headings`: the English heading ids (MkDocs' default slugify) and pinning them on translations.
- `prompt`: the maintainers' data files (prompts, glossary) turned into the model's messages.
- `checks`: structure and meaning checks (numbers, paragraphs, untranslated text, glossary) of a
  draft (or of a whole translated page) against the English.
- `review`: the review pass's schema, its reply and the check that its quotes occur.
- `manifest`: the committed record of which English sections each translation came from
  (two-phase writes, the English text kept for `--adopt`'s diffs and paragraph edits).
- `atomic`: atomic file writes.
- `pages`: which English pages exist and where their translations live.
- `translator`: one model call with retries (exponential backoff, jitter, Retry-After).
- `planning`: what a run must do (which pages, languages, sections and paragraphs need the
  model).
- `runner`: running a plan with bounded concurrency: model, checks, review, repairs, writes.
- `slots`: the bound on the requests in flight, a job's review and repairs before new drafts.
- `status`: the commands without a model: `--check`, `--adopt` (by section), `--dry-run`.
- `report`: progress lines or a progress bar, and the closing summary.
- `tokens`: token estimates and cost for `--dry-run` and the summary.
"""

__all__: list[str] = []
