// Search for Japanese and Chinese pages: the query is split into words the way the index was.
//
// Material builds the Japanese index with TinySegmenter (each piece of text is cut into words)
// but takes the query as typed: "ツール呼び出し" is one term that matches no indexed word
// ("ツール", "呼び出し"), so compound queries found nothing. This worker cuts each plain Japanese
// word of a query with the same segmenter before Material sees it; query syntax (quotes,
// field:, +, -, *, ~, ^) is left as typed. Chinese queries pass unchanged (Material splits their
// Han runs against the index's words itself).
//
// It then runs Material's own worker, imported below (docs_hooks/search_cjk.py fills in the
// name: Material's worker with its Han-run splitting corrected, see that hook).

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

// Registered before Material's listener, so it rewrites the query that Material then reads.
addEventListener("message", (event) => {
  const message = event.data;
  if (message && message.type === QUERY && typeof message.data === "string") {
    message.data = segmentQuery(message.data);
  }
});

importScripts("__MATERIAL_WORKER__");
