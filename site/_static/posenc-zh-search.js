// The Chinese edition's search. Sphinx indexed the pages with jieba, which splits Chinese text into words;
// a query has no spaces either, so Sphinx's own splitQuery (it splits at spaces and punctuation) would look
// up "旋转位置编码" as one word, which no page holds. This splitQuery (searchtools.js keeps one defined
// before it) cuts each run of Chinese characters into the longest words the index knows, left to right:
// 旋转位置编码 -> 旋转 位置 编码, which Sphinx then requires on one page together.
var splitQuery = (query) => {
  const index = typeof Search !== "undefined" ? Search._index : null;
  const known = (word) => index !== null && (word in index.terms || word in index.titleterms);
  const words = [];
  for (const token of query.split(/[^\p{Letter}\p{Number}_]+/u).filter((t) => t)) {
    for (const run of token.match(/\p{Script=Han}+|[^\p{Script=Han}]+/gu)) {
      if (!/\p{Script=Han}/u.test(run) || known(run)) { words.push(run); continue; }
      let start = 0;
      while (start < run.length) {
        let end = run.length;
        while (end > start + 1 && !known(run.slice(start, end))) end -= 1;
        if (known(run.slice(start, end))) words.push(run.slice(start, end));  // an unknown lone character (的) is no word
        start = end;
      }
    }
  }
  return words;
};
