// The site's search worker (docs_hooks/i18n_search.py points every page at it): it rewrites the
// query, then runs Material's worker, unchanged (named in this script's `?material=` parameter).
//
// - Japanese: Material segments the index with TinySegmenter but takes the query as typed, so
//   "ツール呼び出し" (one term, no indexed word) found nothing: plain Japanese words of a query are
//   cut with the same segmenter.
// - Japanese and Chinese: Material splits each run of Han characters of a query into words of
//   the index, but never tries a word ending on the run's last character ("会话" was searched as
//   "会"). A Han word of the query that the index knows is followed by "〇" (a Han character no
//   word has), so the word itself is Material's longest match.
// - Words readers type that the pages say differently (the glossary's `search_synonyms`, in the
//   index's config) are searched together with the pages' word: "圧縮" also looks for "コンパクション".
// - A Python name (`Session.pop_item`) also asks for its parts as exact words, boosted: Material
//   makes every word a prefix search, so "Session" also matched "SessionABC".
// - A word and the words it was expanded into are one word to the reader: when a result has any
//   of them, none is marked "missing" under it.
// - For a query of plain words, a guide page whose title or a heading matches comes before the
//   API reference and the changelog, whose many entries otherwise outrank the guide.

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

// Han words of the Chinese index (jieba's words, separated by U+200B in the index's text).
let hanWords = new Set();
const HAN_RUN = /^\p{sc=Han}+$/u;

function closeHan(word) {
  return HAN_RUN.test(word) && (!hanWords.size || hanWords.has(word)) ? `${word}〇` : word;
}

// A Chinese run of Han characters cut into the index's words, longest first.
function segmentChinese(query) {
  if (!hanWords.size) {
    return query;
  }
  return query.replace(/\p{sc=Han}+/gu, (run) => {
    const words = [];
    for (let i = 0; i < run.length; ) {
      let end = Math.min(run.length, i + 8);
      while (end > i + 1 && !hanWords.has(run.slice(i, end))) end--;
      words.push(run.slice(i, end));
      i = end;
    }
    return words.join(" ");
  });
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
  return term.toLowerCase().replace(/\^\d+|[*~^+\-〇]/g, "");
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
    hanWords = new Set();
    if (message.data.docs.some((doc) => doc.text.includes("\u200b"))) {
      for (const doc of message.data.docs) {
        for (const run of `${doc.title}\u200b${doc.text}`.match(/[\p{sc=Han}\u200b]+/gu) || []) {
          for (const word of run.split("\u200b")) if (word.length > 1) hanWords.add(word);
        }
      }
    }
  }
  if (message && message.type === QUERY && typeof message.data === "string") {
    alternatives = [];
    nameQuery = false;
    // Before and after segmentation: "圧縮" typed alone, or as a word of "履歴の圧縮".
    message.data = boostNames(
      addSynonyms(segmentChinese(segmentQuery(addSynonyms(message.data)))),
    )
      .split(/(\s+)/)
      .map(closeHan)
      .join("");
  }
});

importScripts(new URLSearchParams(self.location.search).get("material"));
