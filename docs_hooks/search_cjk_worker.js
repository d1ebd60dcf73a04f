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
// Material marks a query word that a result lacks as "missing" under the result. A word and the
// words it was expanded into (its synonyms, the parts of a Python name) are one word to the
// reader: when a result has any of them, none of them is marked missing.
//
// Results come grouped by page, in order of their best section's score. For a query of plain
// words (not a Python name), a guide page whose title or a heading matches comes before the API
// reference and the changelog, whose many entries otherwise outrank the guide about the word
// ("compaction" listed an API attribute before the Compaction guide).
//
// It then runs Material's own worker, imported below (docs_hooks/search_cjk.py fills in the
// name: Material's worker with its Han-run splitting corrected, see that hook).

const SETUP = 0; // Material's message type for the index
const QUERY = 2; // Material's message type for a search query
const RESULT = 3; // Material's message type for the results of a query
// Pages ranked after the guides for a query of plain words (locations from the language root).
const SECONDARY = /^(ref|changelog)\//;
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
// The current query's words that stand for one another (a word with its synonyms or its parts).
let alternatives = [];
let nameQuery = false;
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
      nameQuery = true;
      alternatives.push([word, ...parts]);
      return [word, ...parts.map((part) => `${part}^${NAME_BOOST}`)].join(" ");
    })
    .join("");
}

function addSynonyms(query) {
  return query
    .split(/(\s+)/)
    .map((word) => {
      const extra = Object.prototype.hasOwnProperty.call(synonyms, word) ? synonyms[word] : null;
      if (!Array.isArray(extra) || !extra.length) {
        return word;
      }
      alternatives.push([word, ...extra]);
      return [word, ...extra].join(" ");
    })
    .join("");
}

function normalTerm(term) {
  return term.toLowerCase().replace(/\^\d+|[*~^+\-]/g, "");
}

// True when Material's query term `term` is one of, or a piece of, the words of `group`.
function inGroup(term, group) {
  const key = normalTerm(term);
  return key !== "" && group.some((word) => normalTerm(word).includes(key));
}

function withAlternativesFound(result) {
  if (!result.terms || !alternatives.length) {
    return result;
  }
  const terms = { ...result.terms };
  for (const group of alternatives) {
    const keys = Object.keys(terms).filter((term) => inGroup(term, group));
    if (keys.some((term) => terms[term])) {
      for (const term of keys) {
        terms[term] = true;
      }
    }
  }
  return { ...result, terms };
}

function isGuideWithTitleMatch(group) {
  return (
    !SECONDARY.test(group[0].location) && group.some((doc) => /<mark/.test(doc.title || ""))
  );
}

function adjustResults(data) {
  const pages = data.items.map((group) => group.map(withAlternativesFound));
  if (!nameQuery) {
    // A stable partition: matching guides first, the rest in Material's order.
    const guides = pages.filter(isGuideWithTitleMatch);
    const rest = pages.filter((group) => !isGuideWithTitleMatch(group));
    return { ...data, items: [...guides, ...rest] };
  }
  return { ...data, items: pages };
}

// Material's worker answers with the global `postMessage`: its results pass through here.
const postToPage = self.postMessage.bind(self);
self.postMessage = (message, ...rest) => {
  if (message && message.type === RESULT && message.data && Array.isArray(message.data.items)) {
    message = { ...message, data: adjustResults(message.data) };
  }
  postToPage(message, ...rest);
};

// Registered before Material's listener, so it rewrites the query that Material then reads.
addEventListener("message", (event) => {
  const message = event.data;
  if (message && message.type === SETUP && message.data && message.data.config) {
    synonyms = message.data.config.synonyms || {};
  }
  if (message && message.type === QUERY && typeof message.data === "string") {
    alternatives = [];
    nameQuery = false;
    // Before and after segmentation: "圧縮" typed alone, or as a word of "履歴の圧縮".
    message.data = boostNames(addSynonyms(segmentQuery(addSynonyms(message.data))));
  }
});

importScripts("__MATERIAL_WORKER__");
