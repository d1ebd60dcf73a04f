// The site's search worker. For Japanese and Chinese pages the query is split into words the way
// the index was.
//
// Material builds the Japanese index with TinySegmenter (each piece of text is cut into words)
// but takes the query as typed: "ツール呼び出し" is one term that matches no indexed word
// ("ツール", "呼び出し"), so compound queries found nothing. This worker cuts each plain Japanese
// word of a query with the same segmenter before Material sees it; query syntax (quotes,
// field:, +, -, *, ~, ^) is left as typed. Chinese queries pass unchanged (Material splits their
// Han runs against the index's words itself).
//
// Words readers type that the pages say differently (the glossary's `search_synonyms`, put in
// the index's config by docs_hooks/i18n_search.py) are searched together with the pages' word:
// "圧縮" also looks for "コンパクション".
//
// A query word that looks like a Python name (`pop_item`, `Session.pop_item`, `SQLiteSession`)
// also asks for its parts as exact words, boosted: Material makes every word a prefix search, so
// "Session.pop_item" otherwise matched "SessionABC.pop_item" as well as "Session.pop_item" and
// ranked the rarer word first. The object's own entry (titled with its qualified name by
// docs_hooks/i18n_search.py) then comes first.
//
// It then runs Material's own worker, imported below (docs_hooks/search_cjk.py fills in the
// name: Material's worker with its Han-run splitting corrected, see that hook).

const SETUP = 0; // Material's message type for the index
const QUERY = 2; // Material's message type for a search query
const JAPANESE = /[\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}]/u;
const PLAIN_WORD = /^[^\s"*~^:+\-]+$/u;
const PARTICLE = /^\p{sc=Hiragana}$/u; // "の", "を", "に": one kana on its own matches everything

function segmentQuery(query) {
  const segmenter = self.lunr && self.lunr.segmenter; // TinySegmenter: Japanese indexes only
  if (!segmenter || query.includes('"')) {
    return query;
  }
  return query
    .split(/(\s+)/)
    .map((word) => {
      if (!PLAIN_WORD.test(word) || !JAPANESE.test(word)) {
        return word;
      }
      const parts = segmenter.segment(word).filter((part) => !PARTICLE.test(part));
      return parts.length ? parts.join(" ") : word;
    })
    .join("");
}

let synonyms = {};
const NAME = /^[A-Za-z_][\w.]*\w$/;
const NAME_HINT = /[._]|[a-z][A-Z]|[A-Z]{2}[a-z]/;
const NAME_BOOST = 10;

function boostNames(query) {
  return query
    .split(/(\s+)/)
    .map((word) => {
      if (!NAME.test(word) || !NAME_HINT.test(word)) {
        return word;
      }
      const parts = word.split(".").filter(Boolean);
      return [word, ...parts.map((part) => `${part}^${NAME_BOOST}`)].join(" ");
    })
    .join("");
}

function addSynonyms(query) {
  return query
    .split(/(\s+)/)
    .map((word) => {
      const extra = Object.prototype.hasOwnProperty.call(synonyms, word) ? synonyms[word] : null;
      return Array.isArray(extra) && extra.length ? [word, ...extra].join(" ") : word;
    })
    .join("");
}

// Registered before Material's listener, so it rewrites the query that Material then reads.
addEventListener("message", (event) => {
  const message = event.data;
  if (message && message.type === SETUP && message.data && message.data.config) {
    synonyms = message.data.config.synonyms || {};
  }
  if (message && message.type === QUERY && typeof message.data === "string") {
    // Before and after segmentation: "圧縮" typed alone, or as a word of "履歴の圧縮".
    message.data = boostNames(addSynonyms(segmentQuery(addSynonyms(message.data))));
  }
});

importScripts("__MATERIAL_WORKER__");
